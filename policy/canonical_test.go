package policy

import (
	"errors"
	"net/url"
	"testing"
)

// refuse marks a path that must not be forwarded.
const refuse = "REFUSE"

func TestCanonical(t *testing.T) {
	p := &Policy{AdminPrefix: "/admin/api"}
	tests := []struct {
		name, sent string
		want       string // the path forwarded, or refuse
		protected  bool   // protected, or (when refused) answered as protected
	}{
		// Clean paths pass as they are.
		{"clean account", "/account/graphql", "/account/graphql", true},
		{"clean admin", "/admin/api/courses/abc-1", "/admin/api/courses/abc-1", true},
		{"clean page", "/courses/portrait-photography", "/courses/portrait-photography", false},
		{"root", "/", "/", false},
		{"options star", "*", "*", false},
		{"absolute form without a path", "", "/", false},

		// The reproductions: dot segments are resolved and the resolved
		// path is what is judged and forwarded.
		{"dotdot", "/admin/api/students/../courses", "/admin/api/courses", true},
		{"encoded dots", "/admin/api/students/%2e%2e/courses", "/admin/api/courses", true},
		{"upper-case encoded dots", "/admin/api/students/%2E%2E/courses", "/admin/api/courses", true},
		{"dot then dotdot", "/admin/api/students/./../courses", "/admin/api/courses", true},
		{"out of admin", "/admin/api/../../login", "/login", false},
		{"out of account", "/account/graphql/../../", "/", false},
		// ... or refused where a server could read them otherwise.
		{"encoded slashes", "/admin/api/students%2f..%2fcourses", refuse, true},
		{"upper-case encoded slashes", "/admin/api/students%2F..%2Fcourses", refuse, true},
		{"dotdot with params", "/admin/api/students/..;/courses", refuse, true},
		{"backslashes", `/admin/api/students\..\courses`, refuse, true},
		{"encoded backslash", "/admin/api/students%5c..%5ccourses", refuse, true},
		{"encoded slashes after dots", "/admin/api/courses/..%2f..%2fstudents", refuse, true},
		{"back to the root from admin", "/admin/api/x/../../../", "/", false},
		{"climbs from admin", "/admin/api/x/../../../../", refuse, true},
		{"NUL after account", "/account/graphql%00", refuse, true},
		{"newline after account", "/account/graphql%0a", refuse, true},
		{"NUL in admin", "/admin/api/courses%00/x", refuse, true},

		// Double encoding, overlong UTF-8, look-alikes, IIS trimming.
		{"double-encoded dots", "/admin/api/students/%252e%252e/courses", refuse, true},
		{"double-encoded slash", "/admin/api/students%252f..%252fcourses", refuse, true},
		{"overlong dots", "/admin/api/students/%c0%ae%c0%ae/courses", refuse, true},
		{"overlong slash", "/admin/api/students%c0%af..%c0%afcourses", refuse, true},
		{"three-byte overlong dot", "/admin/api/students/%e0%80%ae%e0%80%ae/courses", refuse, true},
		{"fullwidth dots", "/admin/api/students/%EF%BC%8E%EF%BC%8E/courses", refuse, true},
		{"two-dot leader", "/admin/api/students/%E2%80%A5/courses", refuse, true},
		{"fullwidth solidus", "/admin/api/students%EF%BC%8F..%EF%BC%8Fcourses", refuse, true},
		{"division slash", "/admin/api/students%E2%88%95x", refuse, true},
		{"dotdot space", "/admin/api/courses/..%20/students", refuse, true},
		{"three dots", "/admin/api/courses/.../students", refuse, true},
		{"dots and tab", "/admin/api/courses/.%09./students", refuse, true},
		{"params only", "/admin/api/;x/students", refuse, true},
		{"trailing dot is the same area", "/admin/api/students.", "/admin/api/students.", true},
		{"trailing space is the same area", "/admin/api/students%20", "/admin/api/students%20", true},

		// Reaching a protected handler from outside its prefix.
		{"tomcat-style escape", "/static/..;/admin/api/students", refuse, true},
		{"encoded escape", "/static/%2e%2e%2fadmin/api/x", refuse, true},
		{"backslash escape", `/static\..\admin\api\x`, refuse, true},
		{"NUL-terminated admin", "/admin/api%00.html", refuse, true},

		// Spellings folded to one form.
		{"merged slashes", "//admin//api///courses", "/admin/api/courses", true},
		{"unreserved escapes decoded", "/%61dmin/api/%7Euser", "/admin/api/~user", true},
		{"hex upper-cased", "/files/caf%c3%a9", "/files/caf%C3%A9", false},
		{"raw non-ASCII escaped", "/files/caf\xc3\xa9", "/files/caf%C3%A9", false},
		{"raw quote escaped", `/files/"x"`, "/files/%22x%22", false},
		{"trailing slash kept", "/courses/", "/courses/", false},
		{"dot at the end", "/courses/.", "/courses/", false},
		{"case kept", "/Courses/Intro", "/Courses/Intro", false},
		{"case folded for judging", "/Account/GraphQL", "/Account/GraphQL", true},
		{"upper-case admin", "/ADMIN/API/students", "/ADMIN/API/students", true},
		{"params kept", "/account/graphql;v=1", "/account/graphql;v=1", true},
		{"below the Account API", "/account/graphql/x", "/account/graphql/x", true},
		{"not the admin prefix", "/admin/apix/x", "/admin/apix/x", false},

		// Elsewhere, what no reading makes protected is forwarded.
		{"encoded slash elsewhere", "/files/a%2fb", "/files/a%2Fb", false},
		{"double escape elsewhere", "/search/100%2525", "/search/100%2525", false},
		{"dotdot-params elsewhere", "/static/..;/img.png", "/static/..;/img.png", false},
		// ... but climbing and control characters never are.
		{"climbs", "/../etc/passwd", refuse, false},
		{"encoded climb", "/%2e%2e/etc/passwd", refuse, false},
		{"NUL elsewhere", "/x%00", refuse, false},
		{"malformed escape", "/x%zz", refuse, false},
		{"relative", "x/y", refuse, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, prot, err := p.Canonical(tt.sent)
			if tt.want == refuse {
				var pe *PathError
				if !errors.As(err, &pe) {
					t.Fatalf("Canonical(%q) = %q, %v, %v; want a refusal", tt.sent, got, prot, err)
				}
				if pe.Protected != tt.protected {
					t.Errorf("Canonical(%q) refused with Protected=%v, want %v (%v)", tt.sent, pe.Protected, tt.protected, err)
				}
				return
			}
			if err != nil || got != tt.want || prot != tt.protected {
				t.Errorf("Canonical(%q) = %q, %v, %v; want %q, %v", tt.sent, got, prot, err, tt.want, tt.protected)
			}
		})
	}
}

// TestCanonicalDecisions: the policy decides on the canonical path, so a
// resolved path is judged as what it resolves to.
func TestCanonicalDecisions(t *testing.T) {
	p := &Policy{AdminPrefix: "/admin/api"}
	for _, tt := range []struct {
		method, sent, scope string
	}{
		{"GET", "/admin/api/students/../courses", "courses:read"},
		{"GET", "/admin/api/courses/../students", "students:read"},
		{"GET", "/ADMIN/api/Students", "students:read"},
		{"GET", "/admin/api/students.", "students:read"},
		{"POST", "/account/graphql/", "account:read"},
	} {
		canon, prot, err := p.Canonical(tt.sent)
		if err != nil || !prot {
			t.Fatalf("Canonical(%q) = %q, %v, %v", tt.sent, canon, prot, err)
		}
		req, d := p.Decide(tt.method, canon)
		if d != Allow || len(req.Scopes) != 1 || req.Scopes[0] != tt.scope {
			t.Errorf("Decide(%s %s) = %+v, %v; want %s", tt.method, canon, req, d, tt.scope)
		}
	}
	if _, d := p.Decide("POST", "/account/graphql/x"); d == Allow {
		t.Error("a path below the Account API must not be allowed as the Account API")
	}
}

func TestSetRequestPath(t *testing.T) {
	for _, canon := range []string{"/a/b", "/files/a%2Fb", "/caf%C3%A9", "/a;b=c/d:e@f", "/x%25y", "/%22q%22", "/a/"} {
		u, _ := url.Parse("http://h/old?q=%2F&x")
		if err := SetRequestPath(u, canon); err != nil {
			t.Fatal(err)
		}
		if u.EscapedPath() != canon || u.RawQuery != "q=%2F&x" || u.RequestURI() != canon+"?q=%2F&x" {
			t.Errorf("SetRequestPath(%q): sent as %q, query %q", canon, u.RequestURI(), u.RawQuery)
		}
	}
}

// FuzzCanonical: whatever is not refused is forwarded as a path that is
// its own canonical form, that net/url sends byte for byte, and that no
// reading takes anywhere else than the policy judged: a protected path
// reads as one key whether dots are resolved or not, and no reading of an
// unprotected one is protected.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		"/account/graphql", "/admin/api/students/../courses", "/admin/api/a%2f..%2fb",
		"/static/..;/admin/api/x", "/account/graphql%00", "/%c0%ae%c0%ae/admin/api",
		"/admin/api/%EF%BC%8E%EF%BC%8E/x", "//a//b/", "/a/%252e%252e/admin/api", "/Account/GraphQL.",
	} {
		f.Add(s)
	}
	p := &Policy{AdminPrefix: "/admin/api"}
	f.Fuzz(func(t *testing.T, sent string) {
		canon, prot, err := p.Canonical(sent)
		if err != nil {
			return
		}
		again, prot2, err := p.Canonical(canon)
		if err != nil || again != canon || prot2 != prot {
			t.Fatalf("%q -> %q (%v) is not canonical: %q, %v, %v", sent, canon, prot, again, prot2, err)
		}
		if canon == "*" {
			return
		}
		u := &url.URL{}
		if err := SetRequestPath(u, canon); err != nil {
			t.Fatalf("%q -> %q: %v", sent, canon, err)
		}
		resolved, unresolved := readPath(canon, true), readPath(canon, false)
		if prot && (resolved != unresolved || resolved != normalizePath(canon)) {
			t.Fatalf("%q -> protected %q reads as %q and %q", sent, canon, resolved, unresolved)
		}
		if !prot && (p.protectedKey(resolved) || p.protectedKey(unresolved)) {
			t.Fatalf("%q -> unprotected %q reads as protected %q / %q", sent, canon, resolved, unresolved)
		}
	})
}
