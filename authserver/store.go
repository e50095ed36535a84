package authserver

import (
	"errors"
	"time"
)

// Store errors the protocol code acts on.
var (
	ErrNotFound     = errors.New("not found")
	ErrCodeReuse    = errors.New("authorization code already used")
	ErrRefreshReuse = errors.New("refresh token already rotated")
)

// IssuedToken is a token to be stored under its hash.
type IssuedToken struct {
	Hash  string
	Token *Token
}

// Store is everything the authorization server keeps. Each method is one
// transaction, so the same operations map onto a SQL store for sites that
// run several gateway instances.
type Store interface {
	LoadKeys() ([]StoredKey, error)
	SaveKey(k StoredKey) error

	GetClient(id string) (*Client, error)
	PutClient(c *Client) error
	DeleteClient(id string) error
	ListClients() ([]*Client, error)
	CountClientsByKind(kind string) (int, error)

	PutPending(p *PendingAuth) error
	// TakePending returns and deletes a pending request: a consent form
	// submits once.
	TakePending(id string) (*PendingAuth, error)

	GetConsent(clientID, subject string) (*Consent, error)
	PutConsent(clientID, subject string, c *Consent) error

	PutCode(hash string, c *Code) error
	// RedeemCode marks the code used and stores what issue returns, all in
	// one transaction. A code already used yields ErrCodeReuse after its
	// grant has been revoked.
	RedeemCode(hash string, issue func(*Code) (*Grant, []IssuedToken, error)) error

	// GetToken returns a token and its grant.
	GetToken(hash string) (*Token, *Grant, error)
	// RotateRefresh marks the refresh token rotated and stores the tokens
	// that rotate returns, in one transaction. A token rotated more than
	// grace ago revokes the grant and yields ErrRefreshReuse.
	RotateRefresh(hash string, now time.Time, grace time.Duration, rotate func(*Token, *Grant) ([]IssuedToken, error)) error
	RevokeToken(hash string) error
	RevokeGrant(id string) error
	// RevokeClientGrants revokes every grant of a client, so the tokens of
	// a deleted client stop working at once. It returns how many it revoked.
	RevokeClientGrants(clientID string) (int, error)
	// PurgeExpired deletes codes, pending requests and tokens that expired
	// before the given time.
	PurgeExpired(before time.Time) error

	GetSetting(key string) ([]byte, error)
	PutSetting(key string, value []byte) error

	Close() error
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
