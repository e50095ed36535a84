// Package policy is the protected-resource side of a school: it reads a
// bearer token, checks its origin binding, audience and scopes against the
// route's requirement, and builds RFC 6750 / RFC 9728 challenges. It is
// plain Go; the Caddy adapter and the authorization server both use it.
package policy

import (
	"fmt"
	"strings"
)

// AllScopes are every scope the service knows, grouped by area: the one
// scope table that the policy, the consent page and the documents use.
var AllScopes = []string{
	"openid", "profile", "email",
	"courses:read", "courses:write",
	"students:read", "students:write",
	"members:read", "members:write",
	"analytics:read",
	"curriculum:read", "curriculum:write",
	"orders:read",
	"school:read", "school:write",
	"appearance:read", "appearance:write",
	"events:read", "events:write",
	"membership_plans:read", "membership_plans:write",
	"coupons:read", "coupons:write",
	"posts:read", "posts:write",
	"subscriptions:read", "subscriptions:write",
	"digital_products:read", "digital_products:write",
	"comments:read",
	"lecturers:read", "lecturers:write",
	"storage:write",
	"forms:read",
	"pages:read", "pages:write",
	"account:read", "account:write",
}

// OfflineAccess asks for a refresh token (OpenID Connect Core 1.0 §11).
// It stands beside the table, not in it: it grants no data, so no route
// may require it, and what ranges over the table (route rules, admin
// areas, the protected resource's metadata and challenges) never names
// it. Every client may request it, whatever scopes it was given; refresh
// tokens are issued with or without it.
const OfflineAccess = "offline_access"

// RequestableScopes are what the authorization server accepts in a scope
// parameter and advertises: the table, with OfflineAccess after the
// identity scopes.
var RequestableScopes = func() []string {
	n := len(IdentityScopes)
	out := make([]string, 0, len(AllScopes)+1)
	out = append(out, AllScopes[:n]...)
	out = append(out, OfflineAccess)
	return append(out, AllScopes[n:]...)
}()

// MemberOnlyScopes are reserved to the member audience: no operator or
// operator-created client may hold them.
var MemberOnlyScopes = []string{"account:read", "account:write"}

// IdentityScopes are the OpenID Connect scopes about the person.
var IdentityScopes = []string{"openid", "profile", "email"}

var knownScopes = func() map[string]bool {
	m := make(map[string]bool, len(AllScopes))
	for _, s := range AllScopes {
		m[s] = true
	}
	return m
}()

// IsScope reports whether s is a scope of the table (AllScopes).
func IsScope(s string) bool { return knownScopes[s] }

// IsRequestable reports whether s may appear in a scope parameter: a
// scope of the table, or OfflineAccess.
func IsRequestable(s string) bool { return s == OfflineAccess || knownScopes[s] }

// CheckScopes refuses, in a configuration (a vendor's scopes, a rule's),
// a scope the table does not know, with where at the start of the
// message. offline_access is refused by name: every client may request
// it without being given it, and no request can need it.
func CheckScopes(where string, scopes []string) error {
	for _, s := range scopes {
		switch {
		case s == OfflineAccess:
			return fmt.Errorf("%s: scope %q is not configured: every client may request it, and no request needs it", where, s)
		case !knownScopes[s]:
			return fmt.Errorf("%s: unknown scope %q", where, s)
		}
	}
	return nil
}

// ScopeDescription says in plain words what a scope grants, to the person
// on the consent page.
func ScopeDescription(scope string) string { return PersonWording.Describe(scope) }

// ScopeWording words scope descriptions for one readership. The meaning
// (which area, read or write, whether a write also reads) is derived here
// once; only the words differ between the consent page and the documents.
type ScopeWording struct {
	// Fixed words the scopes that name no admin area.
	Fixed map[string]string
	// Read, Write and ReadWrite are formats of the area in words
	// ("membership plans"); Other is a format of the scope itself.
	Read, Write, ReadWrite, Other string
}

// PersonWording speaks to the person on the consent page.
var PersonWording = ScopeWording{
	Fixed: map[string]string{
		"openid":        "Sign you in with your school account",
		"profile":       "See your name, organization and roles",
		"email":         "See your e-mail address",
		OfflineAccess:   "Stay connected when you are not using it",
		"account:read":  "Read your enrollments, course progress, orders and event registrations",
		"account:write": "Change your own account data (enrollments, orders, event registrations)",
	},
	Read: "Read the school's %s", Write: "Change the school's %s", ReadWrite: "Read and change the school's %s",
	Other: "%s",
}

// Describe is the one-line meaning of scope in these words.
func (w ScopeWording) Describe(scope string) string {
	if d, ok := w.Fixed[scope]; ok {
		return d
	}
	area, access, _ := strings.Cut(scope, ":")
	words := strings.ReplaceAll(area, "_", " ")
	switch {
	case access == "read":
		return fmt.Sprintf(w.Read, words)
	case access == "write" && WriteIncludesRead(scope):
		return fmt.Sprintf(w.ReadWrite, words)
	case access == "write":
		return fmt.Sprintf(w.Write, words)
	}
	return fmt.Sprintf(w.Other, scope)
}

// WriteIncludesRead reports whether a write scope also lets its holder
// read its area: reads need <area>:read, which some areas (storage) lack,
// and a token for such an area can hold the write scope only.
func WriteIncludesRead(scope string) bool {
	area, ok := strings.CutSuffix(scope, ":write")
	return ok && (area == "account" || knownScopes[area+":read"])
}

// areaScope is the scope for an admin area and access ("read"/"write"),
// or "" when the table has no such scope.
func areaScope(area, access string) string {
	s := area + ":" + access
	if !knownScopes[s] || area == "account" {
		return ""
	}
	return s
}
