package policy

import "testing"

func TestCleanPathFastPath(t *testing.T) {
	for p, clean := range map[string]bool{
		"/account/graphql": true, "/admin/api/courses/abc-1_2": true, "/a.b/c": true,
		"/": false, "": false, "a/b": false, "/a/": false, "//a": false, "/a//b": false,
		"/a/./b": false, "/a/../b": false, "/a./b": false, "/a/b.": false, "/A": false,
		"/a%2fb": false, "/a;x": false, "/a\\b": false, "/a b": false,
	} {
		if got := isCleanPath(p); got != clean {
			t.Errorf("isCleanPath(%q) = %v, want %v", p, got, clean)
		}
		if clean && readPath(p, true) != p {
			t.Errorf("%q passes as clean but normalizes to %q", p, readPath(p, true))
		}
	}
}

// FuzzCleanPath: whatever the fast path accepts, the full normalization
// leaves unchanged, so skipping it changes no decision.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/account/graphql", "/admin/api/x.y", "/a/.b", "/a-/_b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if isCleanPath(p) && readPath(p, true) != p {
			t.Fatalf("%q passes as clean but normalizes to %q", p, readPath(p, true))
		}
	})
}

func BenchmarkDecide(b *testing.B) {
	p := &Policy{AdminPrefix: "/admin/api"}
	b.ReportAllocs()
	for b.Loop() {
		p.Decide("POST", "/account/graphql")
		p.Decide("GET", "/admin/api/courses/abc")
	}
}

// BenchmarkCanonical: the clean paths that almost every request has cost
// no allocation; a path with dot segments is read in full.
func BenchmarkCanonical(b *testing.B) {
	p := &Policy{AdminPrefix: "/admin/api"}
	for _, path := range []string{"/account/graphql", "/courses/portrait-photography", "/admin/api/students/../courses"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _, _ = p.Canonical(path)
			}
		})
	}
}

// BenchmarkDecideWithRules: a prefix written with a trailing slash and a
// prefix rule cost no per-request normalization (keys are computed once).
func BenchmarkDecideWithRules(b *testing.B) {
	p := &Policy{AdminPrefix: "/admin/api/", Rules: []Rule{
		{Method: "GET", Path: "/admin/api/reports/*", Requirement: Requirement{Scopes: []string{"analytics:read"}}},
	}}
	b.ReportAllocs()
	for b.Loop() {
		_, _, _ = p.Canonical("/admin/api/reports/daily")
		p.Decide("GET", "/admin/api/reports/daily")
	}
}
