package store

import "time"

// Audiences a client and its tokens belong to.
const (
	AudienceMember   = "member"
	AudienceOperator = "operator"
)

// Identity is a signed-in person as the legacy site's session endpoint
// describes them. It is snapshotted into a grant at approval so that
// UserInfo, ID tokens and proxied identity headers need no upstream call.
type Identity struct {
	Subject string   `json:"sub"`
	Email   string   `json:"email,omitempty"`
	Name    string   `json:"name,omitempty"`
	OrgID   string   `json:"org_id,omitempty"`
	Roles   []string `json:"roles,omitempty"`
}

// IsOperator reports whether the person may act as a site operator.
func (id *Identity) IsOperator() bool {
	for _, r := range id.Roles {
		switch r {
		case "owner", "admin", "operator":
			return true
		}
	}
	return false
}

// Client kinds, which decide where a client comes from and what it may do.
const (
	KindVendor   = "vendor"   // configured in the Caddyfile
	KindLoopback = "loopback" // registered dynamically with loopback redirects
	KindApp      = "app"      // member application created by an operator
	KindMetadata = "metadata" // Client ID Metadata Document
)

// Client is a registered OAuth client.
type Client struct {
	ID              string    `json:"client_id"`
	Name            string    `json:"client_name"`
	Kind            string    `json:"kind"`
	Audience        string    `json:"audience"`
	RedirectURIs    []string  `json:"redirect_uris"`
	Scopes          []string  `json:"scopes"`
	SecretHash      string    `json:"secret_hash,omitempty"`
	AuthMethod      string    `json:"token_endpoint_auth_method"`
	ApplicationType string    `json:"application_type,omitempty"`
	IssuedAt        time.Time `json:"issued_at"`
	Reviewed        bool      `json:"reviewed,omitempty"`
	// RegistrationKey identifies an identical dynamic registration, so that
	// repeating it returns the same client instead of piling up new ones.
	RegistrationKey string `json:"registration_key,omitempty"`
	// DPoPBound is RFC 9449's dpop_bound_access_tokens: the token
	// endpoint issues this client DPoP-bound tokens only, whatever the
	// school allows.
	DPoPBound bool `json:"dpop_bound_access_tokens,omitempty"`
}

// Public reports whether the client authenticates with method "none".
func (c *Client) Public() bool { return c.SecretHash == "" }

// PendingAuth is an authorization request waiting for the person's consent.
// It lives server-side; the consent form carries only its id and CSRF token.
type PendingAuth struct {
	ID        string      `json:"id"`
	CSRFHash  string      `json:"csrf_hash"`
	Request   AuthRequest `json:"request"`
	Identity  Identity    `json:"identity"`
	ExpiresAt time.Time   `json:"expires_at"`
}

// AuthRequest is a validated authorization request.
type AuthRequest struct {
	ClientID      string   `json:"client_id"`
	RedirectURI   string   `json:"redirect_uri"`
	Scopes        []string `json:"scopes"`
	Resource      string   `json:"resource"`
	State         string   `json:"state,omitempty"`
	Nonce         string   `json:"nonce,omitempty"`
	CodeChallenge string   `json:"code_challenge"`
	Audience      string   `json:"audience"`
	// DPoPJKT is the dpop_jkt of the request (RFC 9449 §10): the code is
	// redeemed only with a DPoP proof made with the key of this JWK
	// SHA-256 thumbprint. Empty: not bound.
	DPoPJKT string `json:"dpop_jkt,omitempty"`
}

// Code is an issued authorization code, stored under its hash.
type Code struct {
	Request   AuthRequest `json:"request"`
	Identity  Identity    `json:"identity"`
	AuthTime  time.Time   `json:"auth_time"`
	ExpiresAt time.Time   `json:"expires_at"`
	// Used and GrantID record a redemption so a replay can revoke its tokens.
	Used    bool   `json:"used,omitempty"`
	GrantID string `json:"grant_id,omitempty"`
}

// Grant is one authorization of a client by a person; every token issued
// from a code and its refreshes belongs to it and dies with it.
type Grant struct {
	ID        string    `json:"id"`
	ClientID  string    `json:"client_id"`
	Audience  string    `json:"audience"`
	Scopes    []string  `json:"scopes"`
	Resource  string    `json:"resource"`
	Identity  Identity  `json:"identity"`
	AuthTime  time.Time `json:"auth_time"`
	CreatedAt time.Time `json:"created_at"`
	// RefreshedAt is the last rotation of one of its refresh tokens, to
	// within RefreshedPrecision (see RefreshDue).
	RefreshedAt time.Time `json:"refreshed_at,omitempty"`
	Revoked     bool      `json:"revoked,omitempty"`
}

// RefreshedPrecision is how stale a grant's RefreshedAt may be. People
// read it as "last used"; to the hour is what they need, and recording
// every rotation would rewrite the grant (a page of the store, written
// and synced) on every refresh.
const RefreshedPrecision = time.Hour

// RefreshDue reports whether a rotation at now records its time on the
// grant: when the grant was last used (created, or a recorded rotation)
// RefreshedPrecision or longer ago.
func (g *Grant) RefreshDue(now time.Time) bool {
	return now.Sub(g.LastUsed()) >= RefreshedPrecision
}

// LastUsed is when the grant was last used, to within RefreshedPrecision:
// its creation, or its last recorded rotation.
func (g *Grant) LastUsed() time.Time {
	if g.RefreshedAt.After(g.CreatedAt) {
		return g.RefreshedAt
	}
	return g.CreatedAt
}

// Token kinds.
const (
	TokenAccess  = "access"
	TokenRefresh = "refresh"
)

// Token is an issued access or refresh token, stored under its hash.
type Token struct {
	Kind      string    `json:"kind"`
	GrantID   string    `json:"grant_id"`
	ClientID  string    `json:"client_id"`
	Scopes    []string  `json:"scopes"`
	IssuedAt  time.Time `json:"iat"`
	ExpiresAt time.Time `json:"exp"`
	Revoked   bool      `json:"revoked,omitempty"`
	// RotatedAt is set on a refresh token once it has been exchanged.
	RotatedAt time.Time `json:"rotated_at,omitempty"`
	// JKT binds the token to a DPoP key (RFC 9449 §6): the base64url
	// SHA-256 thumbprint of the key a client must prove it holds to use
	// it. Empty: a bearer token (or a refresh token of a confidential
	// client, which its secret binds instead).
	JKT string `json:"jkt,omitempty"`
}

// HeldBy reports whether the presenter of t, who proved holding the key
// of thumbprint jkt (empty: no proof), may use it: an unbound token by
// anyone, a bound one by its key's holder alone.
func (t *Token) HeldBy(jkt string) bool { return t.JKT == "" || t.JKT == jkt }

// Consent remembers which scopes a person granted a client.
type Consent struct {
	Scopes    []string  `json:"scopes"`
	GrantedAt time.Time `json:"granted_at"`
}
