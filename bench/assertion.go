package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// The upstream's side of the bench's second school, the one with
// identity_headers assertion: a request proxied by it (its Host, which
// reverse_proxy passes through) must carry X-School-Assertion signed by
// that school for the bench's member, and no other X-School-* header;
// the answer then says so (assertedAnswer), so that the bench knows the
// check ran. Requests through the other sites skip all of it.

const assertionHeader = "X-School-Assertion"

var assertedAnswer = []byte(`{"data":{"viewer":{"id":"member-1","email":"student@bench.example",` +
	`"enrolledCourses":{"nodes":[{"slug":"course-00001","expireDate":null,"hasLifetimeAccess":true}]}}},` +
	`"extensions":{"identity":"assertion"}}`)

type assertionCheck struct {
	host, issuer, audience string

	mu   sync.Mutex
	keys jwk.Set
	// last is the last assertion verified: the gateway signs one per
	// validated token and caches it with the token, so a signature is
	// checked once, not on every request (which would slow this target's
	// upstream beside the others').
	last atomic.Pointer[verifiedAssertion]
}

type verifiedAssertion struct {
	raw string
	exp time.Time
}

// newAssertionCheck checks the requests of the school at issuer, whose
// assertions name audience (the upstream's origin); nil without issuer.
func newAssertionCheck(issuer, audience string) *assertionCheck {
	if issuer == "" {
		return nil
	}
	return &assertionCheck{host: strings.TrimPrefix(issuer, "http://"), issuer: issuer, audience: audience}
}

// applies reports whether r came through the assertion school.
func (c *assertionCheck) applies(r *http.Request) bool { return c != nil && r.Host == c.host }

func (c *assertionCheck) check(r *http.Request) error {
	for name := range r.Header {
		if len(name) >= 9 && strings.EqualFold(name[:9], "X-School-") && name != assertionHeader {
			return fmt.Errorf("%s forwarded beside the assertion", name)
		}
	}
	values := r.Header.Values(assertionHeader)
	if len(values) != 1 || values[0] == "" {
		return fmt.Errorf("exactly one %s is required", assertionHeader)
	}
	raw := values[0]
	if v := c.last.Load(); v != nil && v.raw == raw && time.Now().Before(v.exp) {
		return nil
	}
	exp, err := c.verify(r.Context(), raw)
	if err != nil {
		return err
	}
	c.last.Store(&verifiedAssertion{raw: raw, exp: exp})
	return nil
}

// verify checks the assertion as a legacy server would
// (docs/backend-contract.md) and returns its expiry.
func (c *assertionCheck) verify(ctx context.Context, raw string) (time.Time, error) {
	msg, err := jws.ParseString(raw, jws.WithCompact())
	if err != nil {
		return time.Time{}, errors.New("the assertion is not a compact JWS")
	}
	if typ, _ := msg.Signatures()[0].ProtectedHeaders().Type(); typ != "school-assertion+jwt" {
		return time.Time{}, fmt.Errorf("typ %q is not school-assertion+jwt", typ)
	}
	keys, err := c.keySet(ctx)
	if err != nil {
		return time.Time{}, err
	}
	tok, err := jwt.ParseString(raw, jwt.WithKeySet(keys), jwt.WithIssuer(c.issuer), jwt.WithAudience(c.audience),
		jwt.WithRequiredClaim(jwt.ExpirationKey), jwt.WithValidate(true))
	if err != nil {
		return time.Time{}, fmt.Errorf("the assertion is not valid: %v", err)
	}
	if sub, _ := tok.Subject(); sub != member["sub"] {
		return time.Time{}, fmt.Errorf("the assertion names %q, not the bench's member", sub)
	}
	exp, _ := tok.Expiration()
	return exp, nil
}

// keySet fetches the school's keys once: they do not rotate in a run.
func (c *assertionCheck) keySet(ctx context.Context) (jwk.Set, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil {
		set, err := jwk.Fetch(ctx, c.issuer+"/.well-known/jwks.json")
		if err != nil {
			return nil, fmt.Errorf("the school's keys: %v", err)
		}
		c.keys = set
	}
	return c.keys, nil
}
