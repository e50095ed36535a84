package schooltest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/schoolgate/schoolgate/store"
)

// Issuer is the test school's origin.
const Issuer = "https://school.example"

// People are who the test school's legacy site knows, by the value of
// their session cookie.
var People = map[string]store.Identity{
	"student":  {Subject: "member-1", Email: "student@demo.school", Name: "Sam Student", OrgID: "demo", Roles: []string{"student"}},
	"owner":    {Subject: "operator-1", Email: "owner@demo.school", Name: "Olivia Owner", OrgID: "demo", Roles: []string{"owner"}},
	"nobody":   {Subject: "guest-1", Email: "guest@demo.school", Name: "No Role", OrgID: "demo"},
	"student2": {Subject: "member-2", Email: "second@demo.school", Name: "Second", OrgID: "demo", Roles: []string{"student"}},
}

// LegacySessions is the legacy site's session endpoint, at every path:
// the person of the request's session cookie, as JSON, or 401. It is
// closed when the test ends.
func LegacySessions(tb testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("session")
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		id, ok := People[c.Value]
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(id)
	}))
	tb.Cleanup(srv.Close)
	return srv
}
