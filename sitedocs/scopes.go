package sitedocs

import (
	"strings"

	"github.com/schoolgate/schoolgate/policy"
)

// The documents describe scopes and admin areas from the scope table
// (policy.AllScopes, with offline_access beside it in
// policy.RequestableScopes), so they cannot drift from what the gateway
// grants.

// developerWording describes scopes for developers; policy.PersonWording
// words the same meanings for the people on the consent page.
var developerWording = policy.ScopeWording{
	Fixed: map[string]string{
		"openid":  "OpenID Connect sign-in: an ID token (when the discovery document lists the signing fields) and the UserInfo endpoint",
		"profile": "The member's basic profile: name, organization and roles",
		"email":   "The member's e-mail address",
		policy.OfflineAccess: "A refresh token, to keep access while the person is away (OpenID Connect Core 1.0 §11). Any client may request it; " +
			"a refresh token comes with every code exchange, with or without it",
		"account:read":  "Read the member's own account data: enrollments, course progress, orders and event registrations (member clients only)",
		"account:write": "Read and change the member's own account data (member clients only)",
	},
	Read: "Read access to %s", Write: "Write access to %s", ReadWrite: "Read and write access to %s",
	Other: "Scope %s",
}

// scopeDescription is the one-line meaning of a scope for developers.
func scopeDescription(scope string) string { return developerWording.Describe(scope) }

// adminArea is one area of the operator admin API, derived from the scope
// table: <area>:read allows GET, <area>:write allows the writing methods.
type adminArea struct {
	Name        string
	Read, Write bool
}

// Words is the area's name as words: "membership plans".
func (a adminArea) Words() string { return strings.ReplaceAll(a.Name, "_", " ") }

// adminAreas lists the areas in the order their first scope appears.
func adminAreas(scopes []string) []adminArea {
	var out []adminArea
	index := map[string]int{}
	for _, sc := range scopes {
		area, access, ok := strings.Cut(sc, ":")
		if !ok || area == "" || area == "account" || strings.ContainsAny(area, "/{}?# ") {
			continue
		}
		i, seen := index[area]
		if !seen {
			i = len(out)
			index[area] = i
			out = append(out, adminArea{Name: area})
		}
		switch access {
		case "read":
			out[i].Read = true
		case "write":
			out[i].Write = true
		}
	}
	// An area whose scopes are neither read nor write gets no operations.
	kept := out[:0]
	for _, a := range out {
		if a.Read || a.Write {
			kept = append(kept, a)
		}
	}
	return kept
}

// isOperatorScope reports the scopes operator clients may hold: every
// scope except the member-only account scopes.
func isOperatorScope(scope string) bool {
	return scope != "account:read" && scope != "account:write"
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
