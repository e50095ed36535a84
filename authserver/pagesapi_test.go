package authserver

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/sitepath"
)

// A server built without pages (Config.Pages nil) answers a browser in
// plain text and cannot ask for consent: an authorization that needs it
// ends in an error, never in a code or a redirect; the pages' areas are
// not there.
func TestWithoutPages(t *testing.T) {
	f := newFixture(t)
	srv, err := New(context.Background(), Config{Issuer: issuer, SessionURL: f.srv.cfg.SessionURL, LoginURL: "/login",
		Options: Options{Vendors: f.srv.cfg.Vendors}, Now: f.clock.Now}, f.store)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	_, c := pkce()
	rec := f.authorize(authParams(c), "student")
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Location") != "" ||
		!strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") || !strings.Contains(rec.Body.String(), "could not be shown") {
		t.Errorf("consent without pages = %d %v\n%s", rec.Code, rec.Header(), rec.Body)
	}
	q := authParams(c)
	q.Set("client_id", "nope")
	if rec := f.authorize(q, "student"); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "not registered with this school") {
		t.Errorf("an error without pages = %d\n%s", rec.Code, rec.Body)
	}
	for _, p := range []string{sitepath.AccountApplications, sitepath.AdminApplications, sitepath.Assets + "pages-0123456789ab.css"} {
		if rec := f.serve("GET", p, nil, map[string]string{"Cookie": "session=owner"}); rec.Code != http.StatusNotFound {
			t.Errorf("%s without pages = %d", p, rec.Code)
		}
	}
}
