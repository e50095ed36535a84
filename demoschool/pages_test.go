package demoschool

import (
	"net/http"
	"strings"
	"testing"
)

// TestPagesLoadOnlyTheStylesheet: every page links the school's one
// stylesheet and carries no inline style, which its policy would refuse.
func TestPagesLoadOnlyTheStylesheet(t *testing.T) {
	h := New(Options{})
	member := cookieHeader(signIn(t, h, "student@demo.school", "student"))
	pages := []struct {
		name, path string
		header     http.Header
		status     int
		want       string
	}{
		{"home", "/", nil, http.StatusOK, `<h2>Courses</h2>`},
		{"home signed in", "/", member, http.StatusOK, `id="logout"`},
		{"course", "/courses/photography-fundamentals", nil, http.StatusOK, `id="course-title"`},
		{"login", "/login", nil, http.StatusOK, `id="password"`},
		{"not found", "/nope", nil, http.StatusNotFound, `<h2>Not found</h2>`},
	}
	link := `<link rel="stylesheet" href="` + stylesheetPath + `">`
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			rec := call(t, h, http.MethodGet, p.path, nil, p.header)
			body := rec.Body.String()
			if rec.Code != p.status || !strings.Contains(body, p.want) {
				t.Fatalf("%d, want %d with %q:\n%s", rec.Code, p.status, p.want, body)
			}
			if csp := rec.Header().Get("Content-Security-Policy"); csp != "default-src 'none'; style-src 'self'; frame-ancestors 'none'" {
				t.Errorf("CSP %q", csp)
			}
			if strings.Count(body, link) != 1 || strings.Contains(body, "<style") || strings.Contains(body, " style=") {
				t.Errorf("the page does not load only the stylesheet:\n%s", body)
			}
		})
	}
}

func TestStylesheet(t *testing.T) {
	h := New(Options{})
	rec := call(t, h, http.MethodGet, stylesheetPath, nil, nil)
	if rec.Code != http.StatusOK || rec.Body.String() != string(stylesheet) || !strings.Contains(rec.Body.String(), "form.inline") {
		t.Fatalf("%d %q", rec.Code, rec.Body)
	}
	hd := rec.Header()
	if hd.Get("Content-Type") != "text/css; charset=utf-8" || hd.Get("X-Content-Type-Options") != "nosniff" ||
		hd.Get("Cache-Control") != "public, max-age=300" {
		t.Errorf("headers %v", hd)
	}
}
