package caddymodule

import (
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/policy"
)

// identityHeaders are set on every request forwarded to a protected
// resource, and mirrored as placeholders for operators' own header_up.
var identityHeaders = []struct {
	header, placeholder string
	value               func(*policy.Token) string
}{
	{"X-School-Subject", "http.auth.user.id", func(t *policy.Token) string { return t.Subject }},
	{"X-School-Email", "http.auth.user.email", func(t *policy.Token) string { return t.Email }},
	{"X-School-Name", "http.auth.user.name", func(t *policy.Token) string { return t.Name }},
	{"X-School-Org-Id", "http.auth.user.org_id", func(t *policy.Token) string { return t.OrgID }},
	{"X-School-Roles", "http.auth.user.roles", func(t *policy.Token) string { return strings.Join(t.Roles, ",") }},
	{"X-School-Scopes", "http.auth.user.scopes", func(t *policy.Token) string { return strings.Join(t.Scopes, " ") }},
	{"X-School-Client-Id", "http.auth.user.client_id", func(t *policy.Token) string { return t.ClientID }},
	{"X-School-Audience", "http.auth.user.audience", func(t *policy.Token) string { return t.Audience }},
}

// setIdentity sets the identity headers and placeholders. The header
// names are already canonical, so they are assigned directly; the
// placeholders are one provider that answers from the token when asked,
// instead of eight map insertions per request that nothing may read.
func setIdentity(r *http.Request, t *policy.Token) {
	// One backing array for the eight header values.
	vals := make([]string, len(identityHeaders))
	for i, h := range identityHeaders {
		vals[i] = h.value(t)
		r.Header[h.header] = vals[i : i+1 : i+1]
	}
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		repl.Map(func(key string) (any, bool) {
			for i, h := range identityHeaders {
				if h.placeholder == key {
					return vals[i], true
				}
			}
			return nil, false
		})
	}
}

// identityHeaderValues returns the identity headers for a token, for
// calls the gateway itself makes to the upstream.
func identityHeaderValues(t *policy.Token) http.Header {
	h := http.Header{}
	for _, ih := range identityHeaders {
		h.Set(ih.header, ih.value(t))
	}
	return h
}
