// Package store is the contract between the authorization server and
// the stores that keep a site: the Store interface and its roles, the
// records they keep, the errors they return, the RFC 9700 decisions they
// apply, and the Dump that moves a site from one store to another. It
// imports nothing but the standard library, so a store depends on the
// contract and not on the protocol.
package store

import (
	"context"
	"errors"
	"io"
	"time"
)

// Store errors the protocol code acts on. Every Store returns these same
// values (wrapped or not, compared with errors.Is), so the protocol code
// never learns which store it runs on.
var (
	// ErrNotFound: the key names nothing, or nothing any longer (purged,
	// deleted, taken). Every getter and every method addressing one row
	// returns it alike.
	ErrNotFound = errors.New("not found")
	// ErrCodeReuse: the authorization code had been redeemed before; its
	// grant is revoked in the same transaction (see DecideRedeem).
	ErrCodeReuse = errors.New("authorization code already used")
	// ErrRefreshReuse: the refresh token had been rotated longer than the
	// grace window ago; its grant is revoked in the same transaction (see
	// DecideRotate).
	ErrRefreshReuse = errors.New("refresh token already rotated")
	// ErrClientLimit: CreateClient was given a limit and the site already
	// holds that many clients of the kind.
	ErrClientLimit = errors.New("too many clients of this kind")
	// ErrWrongKey: a refresh token bound to a DPoP key was presented by
	// someone who did not prove holding that key. Nothing changed: whoever
	// presented it says nothing about the client that holds the key, so it
	// is neither a rotation nor a replay.
	ErrWrongKey = errors.New("the refresh token is bound to another DPoP key")
)

// IssuedToken is a token to be stored under its hash.
type IssuedToken struct {
	Hash  string
	Token *Token
}

// Store is everything the authorization server keeps, one role per
// interface. The contract, which every implementation honours and
// storetest.Run checks:
//
//   - Each method is one transaction: it takes effect whole or not at all,
//     and no other method sees it half done.
//   - Each method takes a context. One that is already cancelled or past
//     its deadline makes the method fail with ctx.Err() before it acts;
//     callers pass the request's context, or a background context with a
//     deadline for background work.
//   - Callbacks (RedeemCode's issue, RotateRefresh's rotate) run inside the
//     transaction and may run more than once when the store retries it.
//     They do no I/O, decide only from their arguments, and reset whatever
//     they capture outside on every call: the last call's result is the one
//     stored. An error a callback returns aborts the transaction and is
//     returned as is.
//   - Errors: ErrNotFound, ErrCodeReuse, ErrRefreshReuse, ErrWrongKey and
//     ErrClientLimit mean the same in every store; anything else is the
//     store failing (unreachable, too slow, out of retries), which callers
//     answer with 503 and never with "no" or "off".
//   - What is decided from what is stored is decided in one method, never
//     by a read and then a write: several gateway instances may share the
//     store, and another may write in between.
//   - Tokens, codes and secrets are kept and looked up by their hashes.
//   - Every method that writes stores, in its transaction, the audit
//     events recorded on its context's Audit, and those it decides itself
//     (audit.go); a method that fails stores none.
type Store interface {
	KeyStore
	ClientStore
	AuthorizationStore
	TokenStore
	GrantStore
	SettingStore
	CatalogStore
	AuditStore
	UsageStore
	StepStore
	Close() error
}

// KeyStore keeps the site's signing keys.
type KeyStore interface {
	// LoadKeys returns every stored key, none on first start.
	LoadKeys(ctx context.Context) ([]StoredKey, error)
	// InitKeys returns every stored key; when there is none, it stores
	// first and returns it alone. Of instances starting at once, one
	// stores its key and the others get that one: a site never has two
	// first keys.
	InitKeys(ctx context.Context, first StoredKey) ([]StoredKey, error)
	// RotateKey stores k and retires, at k.SignFrom, every other key not
	// yet retired.
	RotateKey(ctx context.Context, k StoredKey) error
}

// ClientStore keeps registered clients.
type ClientStore interface {
	GetClient(ctx context.Context, id string) (*Client, error)
	// PutClient stores a client or replaces the one with its ID.
	PutClient(ctx context.Context, c *Client) error
	// CreateClient stores c as a new client. When a client with c.ID
	// exists, or c.RegistrationKey is set and a client of c.Kind already
	// has that key, it stores nothing and returns that client with
	// existing true. Otherwise, when limit > 0 and the site already holds
	// limit clients of c.Kind, it stores nothing and returns
	// ErrClientLimit. Of identical creations at once, exactly one stores.
	CreateClient(ctx context.Context, c *Client, limit int) (got *Client, existing bool, err error)
	// DeleteClient removes a client and revokes its grants in the same
	// transaction, so its tokens stop working with it, and returns how
	// many grants it revoked.
	DeleteClient(ctx context.Context, id string) (revoked int, err error)
	// ListClients returns every client, in no particular order.
	ListClients(ctx context.Context) ([]*Client, error)
	CountClientsByKind(ctx context.Context, kind string) (int, error)
}

// AuthorizationStore keeps an authorization's way to its grant: pending
// requests awaiting consent, remembered consents, and codes.
type AuthorizationStore interface {
	PutPending(ctx context.Context, p *PendingAuth) error
	// TakePending returns and deletes a pending request: a consent form
	// submits once, and a second take is ErrNotFound.
	TakePending(ctx context.Context, id string) (*PendingAuth, error)

	GetConsent(ctx context.Context, clientID, subject string) (*Consent, error)
	PutConsent(ctx context.Context, clientID, subject string, c *Consent) error

	PutCode(ctx context.Context, hash string, c *Code) error
	// RedeemCode marks the code used and stores the grant and tokens that
	// issue returns, in one transaction, as DecideRedeem rules: a code
	// already used yields ErrCodeReuse after its grant has been revoked,
	// and of concurrent redeems of one code exactly one issues.
	RedeemCode(ctx context.Context, hash string, issue func(*Code) (*Grant, []IssuedToken, error)) error
}

// TokenStore keeps grants and the tokens issued under them.
type TokenStore interface {
	// GetToken returns a token and its grant. A token is valid only while
	// neither is revoked nor expired; callers check both.
	GetToken(ctx context.Context, hash string) (*Token, *Grant, error)
	// RotateRefresh stores the tokens that rotate returns for a refresh
	// token, in one transaction, as DecideRotate rules: the first rotation
	// marks the token rotated; another within grace of it rotates again;
	// one later revokes the grant and yields ErrRefreshReuse. Before any
	// of that, a token that holder (the thumbprint of the DPoP key the
	// presenter proved holding, empty for none) does not hold
	// (Token.HeldBy) yields ErrWrongKey and changes nothing. A rotation
	// that stores tokens records now as the grant's RefreshedAt when
	// Grant.RefreshDue says so (at most once per RefreshedPrecision): the
	// one write that tells a person when an application last used its
	// access, which no request for a protected resource makes.
	RotateRefresh(ctx context.Context, hash, holder string, now time.Time, grace time.Duration, rotate func(*Token, *Grant) ([]IssuedToken, error)) error
	// RevokeToken revokes a token, as DecideRevoke rules: a refresh token
	// takes its whole grant along.
	RevokeToken(ctx context.Context, hash string) error
	// RevokeGrant revokes a grant and so every token issued under it. An
	// unknown grant is no error: there is nothing left to revoke.
	RevokeGrant(ctx context.Context, id string) error
	// RevokeClientGrants revokes every grant of a client, so the tokens of
	// a deleted client stop working at once. It returns how many it revoked.
	RevokeClientGrants(ctx context.Context, clientID string) (int, error)
	// PurgeExpired deletes codes, pending requests and tokens that expired
	// before the given time, then grants that are revoked or have no token
	// left, with their tokens, and nothing else. A store may do it in
	// several transactions, each whole; a pass cut short leaves nothing
	// half deleted and the next pass goes on.
	PurgeExpired(ctx context.Context, before time.Time) error
}

// GrantStore finds the grants people gave, for the person's own page
// and the operator's, and ends them. Live grants (not revoked, not yet
// purged) are indexed by subject and by client in the same transaction
// that stores, revokes or purges them, each grouped by the other owner:
// a person's grants application by application, an application's person
// by person. So a page of either list, a person's whole connection to an
// application, and the overview's counts are read from an index, never by
// reading every grant of the site.
//
// Groups are ordered by the bytes of their client id or subject (not by a
// database's collation), and grants within a group by CreatedAt then ID,
// alike in every store.
type GrantStore interface {
	// ListGrants returns up to q.Limit live grants of q.Subject, grouped
	// by client, or of q.ClientID, grouped by person (exactly one is
	// set), starting after q.After. Fewer than q.Limit means the list
	// ended.
	ListGrants(ctx context.Context, q GrantQuery) ([]*Grant, error)
	// ListConnections returns up to q.Limit connections, in the order of
	// ListGrants: q.Subject's to each client, or each person's to
	// q.ClientID, starting after the one whose client (or person) is
	// q.After. Each holds every live grant of its group, however many:
	// a tool authorized six hundred times is one connection. Fewer than
	// q.Limit means the list ended.
	ListConnections(ctx context.Context, q ConnectionQuery) ([]*Connection, error)
	// GrantCounts returns, for each client holding live grants, how many
	// people hold them and how many grants that is; clients without any
	// are absent.
	GrantCounts(ctx context.Context) (map[string]GrantCount, error)
	// DisconnectGrant revokes the grant id of subject and forgets the
	// consent subject remembered for its client, in one transaction, and
	// returns the grant as it was found. A grant of another subject, an
	// empty subject or no grant at all is ErrNotFound. A grant revoked
	// already is returned with Revoked set, and its consent is forgotten
	// all the same: the person asked not to be remembered.
	DisconnectGrant(ctx context.Context, id, subject string) (*Grant, error)
	// DisconnectClient ends subject's whole connection to clientID, in one
	// transaction: it revokes every live grant of the pair (so every
	// token issued under them) and forgets subject's consent to clientID,
	// and returns how many grants it revoked. A refresh under way either
	// commits before it or finds its grant revoked. Nothing live but a
	// remembered consent is 0 and no error, the consent forgotten: the
	// application was disconnected already. Neither a live grant nor a
	// consent, or an empty subject or client, is ErrNotFound. Grants of
	// other clients, and other people's grants of clientID, are untouched.
	DisconnectClient(ctx context.Context, clientID, subject string) (int, error)
}

// GrantQuery selects a page of live grants: of one person (Subject) or of
// one client (ClientID).
type GrantQuery struct {
	Subject  string
	ClientID string
	// After is the position of the previous page's last grant; the zero
	// value starts at the first.
	After GrantCursor
	// Limit bounds the page; stores cap it at MaxGrantPage.
	Limit int
}

// GrantCursor is a position in a list of grants: the last grant seen.
// Its group is ClientID in a person's list and Subject in a client's; a
// store reads the one its list is grouped by.
type GrantCursor struct {
	ClientID  string
	Subject   string
	CreatedAt time.Time
	ID        string
}

// IsZero reports whether the cursor is the start of the list.
func (c GrantCursor) IsZero() bool { return c.ID == "" && c.CreatedAt.IsZero() }

// CursorOf is the position of g in a list of grants.
func CursorOf(g *Grant) GrantCursor {
	return GrantCursor{ClientID: g.ClientID, Subject: g.Identity.Subject, CreatedAt: g.CreatedAt, ID: g.ID}
}

// ConnectionQuery selects a page of connections: of one person (Subject)
// to their applications, or of one client (ClientID) to its people.
type ConnectionQuery struct {
	Subject  string
	ClientID string
	// After is the previous page's last group: a client id in a person's
	// list, a subject in a client's. Empty starts at the first.
	After string
	// Limit bounds the page; stores cap it at MaxGrantPage.
	Limit int
}

// GrantCount is what a client holds: the people connected to it and
// their live grants (one per authorization, so at least one per person).
type GrantCount struct {
	People int `json:"people"`
	Grants int `json:"grants"`
}

// MaxGrantPage bounds one page of grants, whatever the caller asks.
const MaxGrantPage = 500

// PageLimit is the limit a store applies for a requested one: at least 1,
// at most MaxGrantPage.
func PageLimit(n int) int { return min(max(n, 1), MaxGrantPage) }

// SettingStore keeps the site's settings, opaque bytes under a name.
type SettingStore interface {
	GetSetting(ctx context.Context, key string) ([]byte, error)
	PutSetting(ctx context.Context, key string, value []byte) error
	// InitSetting stores value under key unless the key holds one already,
	// and returns what is stored: the first start's value wins.
	InitSetting(ctx context.Context, key string, value []byte) ([]byte, error)
	// PutSettingRevoking stores the setting and revokes every live grant
	// of every client of kind, in one transaction, and returns how many
	// grants it revoked: a switch turned off takes its access with it.
	PutSettingRevoking(ctx context.Context, key string, value []byte, kind string) (int, error)
}

// CatalogStore keeps the last good catalog feed, so a restarted gateway
// serves its catalog at once (it is catalog.Persister).
type CatalogStore interface {
	SaveCatalog(ctx context.Context, raw []byte) error
	// LoadCatalog returns the stored feed, or nil and no error when none
	// has been stored: an empty catalog is not a missing row.
	LoadCatalog(ctx context.Context) ([]byte, error)
}

// Change names what changed in a store that several gateway instances
// share, so that each instance refreshes what it keeps in memory.
type Change int

const (
	// ChangeTokens: a token or grant was revoked.
	ChangeTokens Change = iota + 1
	// ChangeKeys: a signing key was added or retired.
	ChangeKeys
	// ChangeSettings: a setting changed.
	ChangeSettings
	// ChangeCatalog: a new catalog feed was stored.
	ChangeCatalog
	// ChangeAll: changes may have been missed (a reconnect, or the
	// periodic version check found the site changed); refresh everything.
	ChangeAll
)

// Watcher is implemented by a store that several instances share. fn is
// called, from one goroutine at a time, for every change made by any
// instance of the site, this one included. stop ends the calls.
type Watcher interface {
	Watch(fn func(Change)) (stop func())
}

// Backuper is implemented by a store that can copy itself while it
// serves: the copy, opened as the store, is the store at one moment.
type Backuper interface {
	Backup(ctx context.Context, w io.Writer) error
}

// Scheduler is implemented by a store that several instances share, so
// that periodic work (the janitor, the catalog fetch) runs on one instance
// per site and period. A store without it runs every job everywhere.
type Scheduler interface {
	// ClaimRun reports whether this instance runs job now: true for the
	// first caller of the site in each period, false for the others.
	ClaimRun(ctx context.Context, job string, period time.Duration) (bool, error)
}

// StoredKey is a signing key with its lifecycle dates.
type StoredKey struct {
	KID       string    `json:"kid"`
	JWK       []byte    `json:"jwk"` // private key, JWK JSON
	CreatedAt time.Time `json:"created_at"`
	// SignFrom is when the key may start signing: after it has been
	// published long enough for verifiers to see it.
	SignFrom time.Time `json:"sign_from"`
	// RetiredAt is when the key stopped signing; it stays published
	// until the tokens it signed have expired.
	RetiredAt time.Time `json:"retired_at,omitempty"`
}
