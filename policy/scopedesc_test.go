package policy

import (
	"slices"
	"testing"
)

// A write scope promises reads only where the area has a read scope: the
// gateway asks GET for <area>:read (storage has none).
func TestScopeDescriptionOfWriteOnlyAreas(t *testing.T) {
	for scope, want := range map[string]string{
		"storage:write":          "Change the school's storage",
		"courses:write":          "Read and change the school's courses",
		"account:write":          "Change your own account data (enrollments, orders, event registrations)",
		"courses:read":           "Read the school's courses",
		"orders:read":            "Read the school's orders",
		"digital_products:write": "Read and change the school's digital products",
	} {
		if got := ScopeDescription(scope); got != want {
			t.Errorf("ScopeDescription(%q) = %q, want %q", scope, got, want)
		}
	}
	if WriteIncludesRead("storage:write") || !WriteIncludesRead("courses:write") || WriteIncludesRead("courses:read") {
		t.Error("WriteIncludesRead")
	}
}

// offline_access is requestable, worded for the consent page, and beside
// the table: route rules, admin areas and the protected resource range
// over the table and must never name it.
func TestOfflineAccessBesideTheTable(t *testing.T) {
	if IsScope(OfflineAccess) || slices.Contains(AllScopes, OfflineAccess) || !IsRequestable(OfflineAccess) {
		t.Errorf("offline_access: IsScope %v, IsRequestable %v", IsScope(OfflineAccess), IsRequestable(OfflineAccess))
	}
	if IsRequestable("offline") || IsRequestable("OFFLINE_ACCESS") || !IsRequestable("courses:read") {
		t.Error("IsRequestable accepts only the table and offline_access")
	}
	want := slices.Concat(IdentityScopes, []string{OfflineAccess}, AllScopes[len(IdentityScopes):])
	if !slices.Equal(AllScopes[:len(IdentityScopes)], IdentityScopes) || !slices.Equal(RequestableScopes, want) {
		t.Errorf("RequestableScopes = %v, want the table with offline_access after the identity scopes", RequestableScopes)
	}
	if got := ScopeDescription(OfflineAccess); got != "Stay connected when you are not using it" {
		t.Errorf("ScopeDescription(offline_access) = %q", got)
	}
}
