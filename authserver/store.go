package authserver

import (
	"context"
	"errors"
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
//   - Errors: ErrNotFound, ErrCodeReuse and ErrRefreshReuse mean the same
//     in every store; anything else is the store failing.
//   - Tokens, codes and secrets are kept and looked up by their hashes.
type Store interface {
	KeyStore
	ClientStore
	AuthorizationStore
	TokenStore
	SettingStore
	CatalogStore
	Close() error
}

// KeyStore keeps the site's signing keys.
type KeyStore interface {
	// LoadKeys returns every stored key, none on first start.
	LoadKeys(ctx context.Context) ([]StoredKey, error)
	// SaveKey stores a key or updates the one with its kid.
	SaveKey(ctx context.Context, k StoredKey) error
}

// ClientStore keeps registered clients.
type ClientStore interface {
	GetClient(ctx context.Context, id string) (*Client, error)
	// PutClient stores a client or replaces the one with its ID.
	PutClient(ctx context.Context, c *Client) error
	DeleteClient(ctx context.Context, id string) error
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
	// one later revokes the grant and yields ErrRefreshReuse.
	RotateRefresh(ctx context.Context, hash string, now time.Time, grace time.Duration, rotate func(*Token, *Grant) ([]IssuedToken, error)) error
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
	// before the given time, and nothing else.
	PurgeExpired(ctx context.Context, before time.Time) error
}

// SettingStore keeps the site's settings, opaque bytes under a name.
type SettingStore interface {
	GetSetting(ctx context.Context, key string) ([]byte, error)
	PutSetting(ctx context.Context, key string, value []byte) error
}

// CatalogStore keeps the last good catalog feed, so a restarted gateway
// serves its catalog at once (it is catalog.Persister).
type CatalogStore interface {
	SaveCatalog(ctx context.Context, raw []byte) error
	// LoadCatalog returns the stored feed, or nil and no error when none
	// has been stored: an empty catalog is not a missing row.
	LoadCatalog(ctx context.Context) ([]byte, error)
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
