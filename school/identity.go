package school

import (
	"net/http"
	"strings"

	"github.com/schoolgate/schoolgate/policy"
)

// IdentityHeaders are the headers set on every request forwarded to a
// protected resource (docs/backend-contract.md), in the order of the
// values Config.Identified receives.
var IdentityHeaders = func() []string {
	out := make([]string, len(identityHeaders))
	for i, h := range identityHeaders {
		out[i] = h.name
	}
	return out
}()

// identityHeaders are the identity headers and their values. The names
// are canonical, so that they are assigned to a header map directly.
var identityHeaders = []struct {
	name  string
	value func(*policy.Token) string
}{
	{"X-School-Subject", func(t *policy.Token) string { return t.Subject }},
	{"X-School-Email", func(t *policy.Token) string { return t.Email }},
	{"X-School-Name", func(t *policy.Token) string { return t.Name }},
	{"X-School-Org-Id", func(t *policy.Token) string { return t.OrgID }},
	{"X-School-Roles", func(t *policy.Token) string { return strings.Join(t.Roles, ",") }},
	{"X-School-Scopes", func(t *policy.Token) string { return strings.Join(t.Scopes, " ") }},
	{"X-School-Client-Id", func(t *policy.Token) string { return t.ClientID }},
	{"X-School-Audience", func(t *policy.Token) string { return t.Audience }},
}

// Identity is the identity of a protected request about to be forwarded:
// the values of its identity headers, worked out when asked, so that with
// AssertionOnly, where no header needs them, a request computes none.
type Identity struct{ tok *policy.Token }

// Value is the value of IdentityHeaders[i].
func (id Identity) Value(i int) string { return identityHeaders[i].value(id.tok) }

// setIdentity sets the identity headers of a protected request, from one
// backing array for the eight values, and tells Config.Identified. With
// AssertionOnly the headers are left out: the assertion carries them.
func (s *Site) setIdentity(r *http.Request, t *policy.Token) {
	if !s.assertionOnly {
		vals := make([]string, len(identityHeaders))
		for i, h := range identityHeaders {
			vals[i] = h.value(t)
			r.Header[h.name] = vals[i : i+1 : i+1]
		}
	}
	if s.cfg.Identified != nil {
		s.cfg.Identified(r, Identity{t})
	}
}

// identityHeaderValues returns the identity headers for a token, for
// calls the school itself makes to the upstream: none with AssertionOnly.
func (s *Site) identityHeaderValues(t *policy.Token) http.Header {
	h := http.Header{}
	if s.assertionOnly {
		return h
	}
	for _, ih := range identityHeaders {
		h.Set(ih.name, ih.value(t))
	}
	return h
}
