package demoschool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// AssertionConfig makes the protected APIs verify the gateway's signed
// identity assertion (X-School-Assertion, docs/backend-contract.md) and
// take the caller's identity from it instead of from the
// plain X-School-* headers, which anyone who reaches this server directly
// can send.
type AssertionConfig struct {
	// JWKSURL is the gateway's key set: <issuer>/.well-known/jwks.json.
	JWKSURL string
	// Issuer is the gateway's issuer, the school site's origin.
	Issuer string
	// Audience is this server's name in the assertion's aud: by default
	// the gateway's upstream origin, e.g. http://127.0.0.1:9080.
	Audience string
	// HTTPClient fetches the key set; nil means one with a 5 s timeout.
	HTTPClient *http.Client
}

// Validate reports a configuration that could verify nothing.
func (c *AssertionConfig) Validate() error {
	switch {
	case c.JWKSURL == "":
		return errors.New("assertion: the gateway's JWKS URL is required")
	case c.Issuer == "":
		return errors.New("assertion: the gateway's issuer is required")
	case c.Audience == "":
		return errors.New("assertion: the audience (this server's origin as the gateway names it) is required")
	}
	return nil
}

const (
	assertionHeader = "X-School-Assertion"
	// keySetMaxAge refetches the key set now and then, so retired keys
	// stop verifying here too.
	keySetMaxAge = 15 * time.Minute
	// keySetRefetchMin bounds refetches for unknown key ids: the gateway
	// publishes a rotated key an hour before it signs, so a kid unknown
	// now is one a forger made up far more often than a new key.
	keySetRefetchMin = 10 * time.Second
)

// verifyAssertion checks an X-School-Assertion with the gateway's keys.
// docs/backend-contract.md shows this function as the example for legacy
// servers.
func verifyAssertion(raw string, keys jwk.Set, issuer, audience string) (jwt.Token, error) {
	msg, err := jws.ParseString(raw, jws.WithCompact())
	if err != nil {
		return nil, err
	}
	// The same keys sign the gateway's ID tokens: typ and aud tell them apart.
	if typ, _ := msg.Signatures()[0].ProtectedHeaders().Type(); typ != "school-assertion+jwt" {
		return nil, fmt.Errorf("typ %q is not school-assertion+jwt", typ)
	}
	return jwt.ParseString(raw,
		jwt.WithKeySet(keys), // kid must match; the algorithm comes from the key (ES256), never the token
		jwt.WithIssuer(issuer),
		jwt.WithAudience(audience),
		jwt.WithRequiredClaim(jwt.ExpirationKey),
		jwt.WithAcceptableSkew(30*time.Second),
		jwt.WithValidate(true),
	)
}

// assertedIdentity is what a verified assertion says: the X-School-*
// headers' values, signed.
type assertedIdentity struct {
	Subject       string   `json:"sub"`
	Email         string   `json:"email"`
	Name          string   `json:"name"`
	OrgID         string   `json:"org_id"`
	Roles         []string `json:"roles"`
	Scope         string   `json:"scope"`
	ClientID      string   `json:"client_id"`
	TokenAudience string   `json:"token_audience"`
}

// assertionGuard verifies assertions with a fetched key set, fetched
// again when a kid is unknown (a rotated key) or the set is old.
type assertionGuard struct {
	cfg    AssertionConfig
	client *http.Client
	now    func() time.Time

	mu      sync.Mutex
	keys    jwk.Set
	fetched time.Time
}

func newAssertionGuard(cfg *AssertionConfig, now func() time.Time) *assertionGuard {
	if cfg == nil {
		return nil
	}
	g := &assertionGuard{cfg: *cfg, client: cfg.HTTPClient, now: now}
	if g.client == nil {
		g.client = &http.Client{Timeout: 5 * time.Second}
	}
	return g
}

// guard refuses a request without a valid assertion (401 JSON) and hands
// next the verified identity in place of the X-School-* headers sent. A
// nil guard (the option off) trusts the headers, as before.
func (g *assertionGuard) guard(next http.HandlerFunc) http.HandlerFunc {
	if g == nil {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := g.verify(r.Context(), r.Header.Values(assertionHeader))
		if err != nil {
			noStore(w)
			writeError(w, http.StatusUnauthorized, "invalid_assertion", err.Error())
			return
		}
		id.replaceHeaders(r.Header)
		next(w, r)
	}
}

func (g *assertionGuard) verify(ctx context.Context, values []string) (*assertedIdentity, error) {
	if err := g.cfg.Validate(); err != nil {
		return nil, err // misconfigured: refuse everything rather than trust headers
	}
	if len(values) != 1 || values[0] == "" {
		return nil, fmt.Errorf("exactly one %s header is required; this server does not trust plain X-School-* headers", assertionHeader)
	}
	raw := values[0]
	msg, err := jws.ParseString(raw, jws.WithCompact())
	if err != nil {
		return nil, errors.New("the assertion is not a compact JWS")
	}
	kid, _ := msg.Signatures()[0].ProtectedHeaders().KeyID()
	keys, err := g.keySet(ctx, kid)
	if err != nil {
		return nil, err
	}
	if _, err := verifyAssertion(raw, keys, g.cfg.Issuer, g.cfg.Audience); err != nil {
		return nil, fmt.Errorf("the assertion is not valid: %v", err)
	}
	var id assertedIdentity
	if err := json.Unmarshal(msg.Payload(), &id); err != nil || id.Subject == "" {
		return nil, errors.New("the assertion names no subject")
	}
	return &id, nil
}

// keySet returns the gateway's keys, fetching them on first use, when
// kid is not among them (at most every keySetRefetchMin) and when they
// are older than keySetMaxAge. A failed refetch keeps the keys it has.
func (g *assertionGuard) keySet(ctx context.Context, kid string) (jwk.Set, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if g.keys != nil {
		_, known := g.keys.LookupKeyID(kid)
		age := now.Sub(g.fetched)
		if age < keySetMaxAge && (known || age < keySetRefetchMin) {
			return g.keys, nil
		}
	}
	set, err := jwk.Fetch(ctx, g.cfg.JWKSURL, jwk.WithHTTPClient(g.client))
	if err != nil {
		if g.keys != nil {
			g.fetched = now
			return g.keys, nil
		}
		return nil, fmt.Errorf("the gateway's keys could not be fetched from %s", g.cfg.JWKSURL)
	}
	g.keys, g.fetched = set, now
	return set, nil
}

// replaceHeaders puts the verified identity where the handlers read it,
// dropping every X-School-* header that came with the request but the
// assertion itself.
func (id *assertedIdentity) replaceHeaders(h http.Header) {
	for name := range h {
		if len(name) >= 9 && strings.EqualFold(name[:9], "X-School-") && !strings.EqualFold(name, assertionHeader) {
			delete(h, name)
		}
	}
	h.Set("X-School-Subject", id.Subject)
	h.Set("X-School-Email", id.Email)
	h.Set("X-School-Name", id.Name)
	h.Set("X-School-Org-Id", id.OrgID)
	h.Set("X-School-Roles", strings.Join(id.Roles, ","))
	h.Set("X-School-Scopes", id.Scope)
	h.Set("X-School-Client-Id", id.ClientID)
	h.Set("X-School-Audience", id.TokenAudience)
}
