package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/authserver"
)

// The grants routes list a school's connections (per application, per
// application's people, per person) and end one person's grant.
func TestGrantsRoutes(t *testing.T) {
	if _, err := caddy.GetModule("admin.api.schoolgate_grants"); err != nil {
		t.Fatalf("the routes are not registered with Caddy's admin API: %v", err)
	}
	ts := newTestSite(t, nil)
	app := &App{sites: map[string]*site{ts.g.Issuer: ts.g.site}}
	prev := activeApp
	activeApp = func() (any, error) { return app, nil }
	defer func() { activeApp = prev }()
	const school = "https%3A%2F%2Fschool.example"
	for _, tt := range []struct {
		name, target string
		status       int
		has          string
	}{
		{"counts", "/schoolgate/grants?issuer=" + school, 200, `"client_id":"member-app","client_name":"member-app","people":1,"grants":1`},
		{"an application's people", "/schoolgate/grants?issuer=" + school + "&client_id=member-app", 200, `"grant_id":"grant-1"`},
		{"a person's applications", "/schoolgate/grants?issuer=" + school + "&subject=member-1&limit=10", 200, `"email":"student@demo.school"`},
		{"nobody's", "/schoolgate/grants?issuer=" + school + "&subject=member-9", 200, `"grants":[]`},
		{"both", "/schoolgate/grants?issuer=" + school + "&subject=member-1&client_id=member-app", 400, "not both"},
		{"bad limit", "/schoolgate/grants?issuer=" + school + "&subject=member-1&limit=0", 400, "limit"},
		{"too large a limit", "/schoolgate/grants?issuer=" + school + "&subject=member-1&limit=500", 400, "limit"},
		{"bad cursor", "/schoolgate/grants?issuer=" + school + "&subject=member-1&after=nope", 400, "cursor"},
		{"no school", "/schoolgate/grants", 400, "issuer"},
		{"unknown school", "/schoolgate/grants?issuer=https%3A%2F%2Fother.example", 404, "no school"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, body := callAdmin(t, handleGrants, httptest.NewRequest("GET", tt.target, nil))
			if status != tt.status || !strings.Contains(body, tt.has) {
				t.Errorf("= %d %s, want %d with %s", status, body, tt.status, tt.has)
			}
		})
	}
	if status, _ := callAdmin(t, handleGrants, httptest.NewRequest("POST", "/schoolgate/grants", nil)); status != 405 {
		t.Errorf("POST /schoolgate/grants = %d", status)
	}
	revoke := func(body string) (int, string) {
		return callAdmin(t, handleGrantRevoke, httptest.NewRequest("POST", "/schoolgate/grants/revoke", strings.NewReader(body)))
	}
	for _, tt := range []struct {
		name, body string
		status     int
		has        string
	}{
		{"no person", `{"issuer":"https://school.example","grant_id":"grant-1"}`, 400, "subject"},
		{"another person", `{"issuer":"https://school.example","grant_id":"grant-1","subject":"member-2"}`, 404, "no such grant"},
		{"unknown grant", `{"issuer":"https://school.example","grant_id":"nope","subject":"member-1"}`, 404, "no such grant"},
		{"not JSON", `grant-1`, 400, "JSON"},
	} {
		if status, body := revoke(tt.body); status != tt.status || !strings.Contains(body, tt.has) {
			t.Errorf("%s: = %d %s, want %d with %s", tt.name, status, body, tt.status, tt.has)
		}
	}
	if _, err := ts.as.LookupAccessToken(context.Background(), ts.token); err != nil {
		t.Fatalf("a refused revocation ended the grant: %v", err)
	}
	for _, want := range []string{`"revoked":true`, `"already_revoked":true`} {
		status, body := revoke(`{"issuer":"https://school.example","grant_id":"grant-1","subject":"member-1"}`)
		if status != 200 || !strings.Contains(body, want) {
			t.Errorf("revoke = %d %s, want %s", status, body, want)
		}
	}
	if _, err := ts.as.LookupAccessToken(context.Background(), ts.token); !errors.Is(err, authserver.ErrInvalidToken) {
		t.Errorf("the revoked grant's token: %v", err)
	}
	_, body := callAdmin(t, handleGrants, httptest.NewRequest("GET", "/schoolgate/grants?issuer="+school, nil))
	var counts struct {
		Clients []authserver.ConnectedApp `json:"clients"`
	}
	if err := json.Unmarshal([]byte(body), &counts); err != nil || len(counts.Clients) != 0 {
		t.Errorf("counts after the revocation: %s", body)
	}
}

// callAdmin runs an admin handler as Caddy's admin server does: an error
// it returns becomes the status and message.
func callAdmin(t *testing.T, h func(http.ResponseWriter, *http.Request) error, r *http.Request) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	err := h(rec, r)
	var ae caddy.APIError
	switch {
	case err == nil:
		return rec.Code, rec.Body.String()
	case errors.As(err, &ae):
		return ae.HTTPStatus, ae.Err.Error()
	}
	t.Fatalf("handler error: %v", err)
	return 0, ""
}

// The commands' flags become the routes' query and body.
func TestGrantCommands(t *testing.T) {
	cmds := grantCommands()
	list, revoke := cmds[0], cmds[1]
	if err := list.ParseFlags([]string{"--client-id", "app_1", "--after", "abc", "--limit", "20"}); err != nil {
		t.Fatal(err)
	}
	got := grantsQuery(list, "https://school.example")
	want := "/schoolgate/grants?after=abc&client_id=app_1&issuer=https%3A%2F%2Fschool.example&limit=20"
	if got != want {
		t.Errorf("query = %s, want %s", got, want)
	}
	if revoke.Name() != "revoke-grant" || list.Name() != "grants" {
		t.Errorf("commands are %s and %s", list.Name(), revoke.Name())
	}
	if err := revoke.Args(revoke, nil); err == nil {
		t.Error("revoke-grant runs without a grant id")
	}
}
