package authserver

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/schoolgate/schoolgate/policy"
)

// Checking what an operator asks for a member application, from the
// admin area's forms or the admin API: every message returned is for
// the operator (InputError).

// Limits of a member application.
const (
	maxAppNameLen      = 200
	maxAppRedirectURIs = 20
	maxAppRedirectLen  = 2048
)

// MaxClientIDLen bounds a client id, or a subject, that an operation
// reads: a longer one names nothing stored.
const MaxClientIDLen = 2048

// memberAppScopeNames are the scopes a client acting for a member may be
// given: identity and the member's own account.
var memberAppScopeNames = []string{"openid", "profile", "email", "account:read", "account:write"}

// MemberAppScopes is policy.AllScopes, in the table's order, limited to
// memberAppScopeNames: what an operator may choose for a member
// application or a reviewed metadata-document client.
func MemberAppScopes() []string {
	var out []string
	for _, s := range policy.AllScopes {
		if slices.Contains(memberAppScopeNames, s) {
			out = append(out, s)
		}
	}
	return out
}

// checkAppRedirect accepts an absolute https URL, or an http URL on a
// loopback address (RFC 8252 §7.3), without fragment or credentials.
func checkAppRedirect(raw string) *InputError {
	if len(raw) > maxAppRedirectLen {
		return NewInputError("admin.invalid.redirect_long", "n", maxAppRedirectLen)
	}
	uri := strconv.Quote(raw)
	if strings.IndexFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 ||
		!utf8.ValidString(raw) {
		return NewInputError("admin.invalid.redirect_space", "uri", uri)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return NewInputError("admin.invalid.redirect_relative", "uri", uri)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return NewInputError("admin.invalid.redirect_fragment", "uri", uri)
	case u.User != nil:
		return NewInputError("admin.invalid.redirect_user", "uri", uri)
	case u.Scheme == "https":
		return nil
	case isLoopbackRedirect(u):
		return nil
	}
	return NewInputError("admin.invalid.redirect_https", "uri", uri)
}

// parseMemberScopes checks chosen scopes against MemberAppScopes and
// returns them in the scope table's order.
func parseMemberScopes(chosen []string) ([]string, *InputError) {
	allowed := MemberAppScopes()
	for _, sc := range chosen {
		if sc == policy.OfflineAccess {
			return nil, NewInputError("admin.invalid.offline")
		}
		if !slices.Contains(allowed, sc) {
			if len(sc) > 64 {
				sc = sc[:64] + "…"
			}
			return nil, NewInputError("admin.invalid.scope", "scope", strconv.Quote(sc),
				"allowed", strings.Join(allowed, ", "))
		}
	}
	var out []string
	for _, sc := range allowed {
		if slices.Contains(chosen, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, NewInputError("admin.invalid.scope_none")
	}
	return out, nil
}
