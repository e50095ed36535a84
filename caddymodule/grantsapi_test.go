package caddymodule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/store"
)

// storeGrant stores a live grant of clientID for subject with one access
// token, raw, as a code exchange would.
func storeGrant(t *testing.T, st store.Store, id, clientID, subject, raw string) {
	t.Helper()
	hash := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	now := time.Now()
	if err := st.PutCode(context.Background(), hash("code-"+id), &store.Code{ExpiresAt: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	err := st.RedeemCode(context.Background(), hash("code-"+id), func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
		g := &store.Grant{ID: id, ClientID: clientID, Audience: store.AudienceMember,
			Scopes: []string{"openid"}, CreatedAt: now, Identity: store.Identity{Subject: subject}}
		return g, []store.IssuedToken{{Hash: hash(raw), Token: &store.Token{Kind: store.TokenAccess,
			GrantID: g.ID, ClientID: g.ClientID, Scopes: g.Scopes, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The grants routes list a school's connections (per application, per
// application's people, per person) and end, for one person, one grant or
// everything an application holds for them.
func TestGrantsRoutes(t *testing.T) {
	if _, err := caddy.GetModule("admin.api.schoolgate_grants"); err != nil {
		t.Fatalf("the routes are not registered with Caddy's admin API: %v", err)
	}
	ts := newTestSite(t, nil)
	// The same person on a second device, and another person.
	second, others := "sgat_"+strings.Repeat("u", 43), "sgat_"+strings.Repeat("v", 43)
	storeGrant(t, ts.site.stored.Store, "grant-2", "member-app", "member-1", second)
	storeGrant(t, ts.site.stored.Store, "grant-3", "member-app", "member-2", others)
	runningAs(t, &App{sites: map[string]*site{ts.g.Issuer: ts.site}})
	const school = "https%3A%2F%2Fschool.example"
	for _, tt := range []struct {
		name, target string
		status       int
		has          string
	}{
		{"counts", "/schoolgate/grants?issuer=" + school, 200, `"client_id":"member-app","client_name":"member-app","people":2,"grants":3`},
		{"an application's people", "/schoolgate/grants?issuer=" + school + "&client_id=member-app", 200, `"grant_id":"grant-1"`},
		{"a person's applications", "/schoolgate/grants?issuer=" + school + "&subject=member-1&limit=10", 200, `"email":"student@demo.school"`},
		{"nobody's", "/schoolgate/grants?issuer=" + school + "&subject=member-9", 200, `"grants":[]`},
		{"an application's grants, person by person", "/schoolgate/grants?issuer=" + school + "&client_id=member-app&limit=2", 200,
			`"grant_id":"grant-1"`},
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
		{"no person for an application", `{"issuer":"https://school.example","client_id":"member-app"}`, 400, "subject"},
		{"both a grant and an application", `{"issuer":"https://school.example","grant_id":"grant-1","client_id":"member-app","subject":"member-1"}`, 400, "not both"},
		{"neither", `{"issuer":"https://school.example","subject":"member-1"}`, 400, `"grant_id"`},
		{"another person", `{"issuer":"https://school.example","grant_id":"grant-1","subject":"member-2"}`, 404, "no such grant"},
		{"unknown grant", `{"issuer":"https://school.example","grant_id":"nope","subject":"member-1"}`, 404, "no such grant"},
		{"a person not connected", `{"issuer":"https://school.example","client_id":"member-app","subject":"member-9"}`, 404, "no grant of this application"},
		{"an unknown application", `{"issuer":"https://school.example","client_id":"nope","subject":"member-1"}`, 404, "no grant of this application"},
		{"no school", `{"client_id":"member-app","subject":"member-1"}`, 400, "issuer"},
		{"not JSON", `grant-1`, 400, "JSON"},
	} {
		if status, body := revoke(tt.body); status != tt.status || !strings.Contains(body, tt.has) {
			t.Errorf("%s: = %d %s, want %d with %s", tt.name, status, body, tt.status, tt.has)
		}
	}
	lookup := func(raw string) error {
		_, err := ts.as.LookupAccessToken(context.Background(), raw)
		return err
	}
	for _, raw := range []string{ts.token, second, others} {
		if err := lookup(raw); err != nil {
			t.Fatalf("a refused revocation ended a grant: %v", err)
		}
	}
	// Everything the application holds for the person: both devices.
	status, body := revoke(`{"issuer":"https://school.example","client_id":"member-app","subject":"member-1"}`)
	if status != 200 || !strings.Contains(body, `"revoked":true`) || !strings.Contains(body, `"grants_ended":2`) ||
		!strings.Contains(body, `"client_id":"member-app"`) || !strings.Contains(body, `"sub":"member-1"`) {
		t.Errorf("revoke the application = %d %s", status, body)
	}
	for _, raw := range []string{ts.token, second} {
		if err := lookup(raw); !errors.Is(err, authserver.ErrInvalidToken) {
			t.Errorf("a disconnected grant's token: %v", err)
		}
	}
	if err := lookup(others); err != nil {
		t.Errorf("another person's grant of the application: %v", err)
	}
	if status, body := revoke(`{"issuer":"https://school.example","client_id":"member-app","subject":"member-1"}`); status != 404 {
		t.Errorf("the same again = %d %s; want 404, nothing is left", status, body)
	}
	// One grant by its id: ended, then found ended already.
	for _, want := range [][2]string{{`"revoked":true`, `"grants_ended":1`}, {`"already_revoked":true`, `"grants_ended":0`}} {
		status, body := revoke(`{"issuer":"https://school.example","grant_id":"grant-3","subject":"member-2"}`)
		if status != 200 || !strings.Contains(body, want[0]) || !strings.Contains(body, want[1]) ||
			!strings.Contains(body, `"grant":{"grant_id":"grant-3"`) {
			t.Errorf("revoke = %d %s, want %s", status, body, want)
		}
	}
	if err := lookup(others); !errors.Is(err, authserver.ErrInvalidToken) {
		t.Errorf("the revoked grant's token: %v", err)
	}
	_, body = callAdmin(t, handleGrants, httptest.NewRequest("GET", "/schoolgate/grants?issuer="+school, nil))
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
