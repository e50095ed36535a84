package policy

import "testing"

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
