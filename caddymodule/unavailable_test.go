package caddymodule

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/school"
	"github.com/schoolgate/schoolgate/schooltest"
)

// downSite is a test site whose store has been closed after its token was
// minted: every store call fails as with a database that is down.
func downSite(t *testing.T) *testSite {
	t.Helper()
	ts := newTestSite(t, nil)
	app := &App{sites: map[string]*site{ts.g.Issuer: ts.site}}
	prev := activeApp
	activeApp = func() (any, error) { return app, nil }
	t.Cleanup(func() { activeApp = prev })
	if err := ts.site.stored.Close(); err != nil {
		t.Fatal(err)
	}
	return ts
}

// With the store down, the JSON admin API answers 503 with Retry-After
// and the JSON error temporarily_unavailable, never a 500 (the gateway's
// own paths: school.TestStoreFailureIsUnavailable).
func TestStoreFailureIsUnavailable(t *testing.T) {
	const issuer = "https://school.example"
	admin := func(method, path, body string) *http.Request {
		return httptest.NewRequest(method, path, strings.NewReader(body))
	}
	cases := []struct {
		name    string
		request *http.Request
		handler func(http.ResponseWriter, *http.Request) error
	}{
		{"read the switch", admin("GET", "/schoolgate/mcp-connections?issuer="+issuer, ""), handleMCPConnections},
		{"switch on", admin("POST", "/schoolgate/mcp-connections", `{"issuer":"`+issuer+`","enabled":true}`), handleMCPConnections},
		{"switch off", admin("POST", "/schoolgate/mcp-connections", `{"issuer":"`+issuer+`","enabled":false}`), handleMCPConnections},
		{"list clients", admin("GET", "/schoolgate/clients?issuer="+issuer, ""), handleClients},
		{"create a client", admin("POST", "/schoolgate/clients", `{"issuer":"`+issuer+`","client_name":"Tool",`+
			`"redirect_uris":["https://tool.example/cb"],"scopes":["openid"]}`), handleClients},
		{"delete a client", admin("POST", "/schoolgate/clients/delete", `{"issuer":"`+issuer+`","client_id":"app_x"}`), handleClientDelete},
		{"review a client", admin("POST", "/schoolgate/clients/review", `{"issuer":"`+issuer+`","client_id":"https://doc.example/c.json",`+
			`"scopes":["openid"],"reviewed":true}`), handleClientReview},
		{"rotate keys", admin("POST", "/schoolgate/keys/rotate", `{"issuer":"`+issuer+`"}`), handleRotate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			downSite(t)
			rec := httptest.NewRecorder()
			if err := tc.handler(rec, tc.request); err != nil {
				t.Fatalf("answered with Caddy's error (%v), not the 503", err)
			}
			checkUnavailable(t, rec)
		})
	}
}

// checkUnavailable checks a store failure's answer (schooltest's).
var checkUnavailable = schooltest.CheckUnavailable

// A catalog that could not be stored is the store failing, not a bad
// feed: 503.
func TestCatalogRefreshStoreFailure(t *testing.T) {
	ts := newTestSite(t, nil)
	ts.g.Catalog = "../demoschool/catalog.json"
	ts.site = buildTestSite(t, ts.g, ts.site.stored)
	app := &App{sites: map[string]*site{ts.g.Issuer: ts.site}}
	prev := activeApp
	activeApp = func() (any, error) { return app, nil }
	t.Cleanup(func() { activeApp = prev })
	if err := ts.site.stored.Close(); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/schoolgate/catalog/refresh", strings.NewReader(`{"issuer":"`+ts.g.Issuer+`"}`))
	if err := handleCatalogRefresh(rec, r); err != nil {
		t.Fatalf("answered with Caddy's error (%v), not the 503", err)
	}
	checkUnavailable(t, rec)
}

// The health check reports a store that does not read as unhealthy, with
// 503 for load balancers and monitors.
func TestHealthReportsTheStore(t *testing.T) {
	for _, down := range []bool{false, true} {
		ts := newTestSite(t, nil)
		app := &App{sites: map[string]*site{ts.g.Issuer: ts.site}}
		prev := activeApp
		activeApp = func() (any, error) { return app, nil }
		if down {
			if err := ts.site.stored.Close(); err != nil {
				t.Fatal(err)
			}
		}
		rec := httptest.NewRecorder()
		err := handleHealth(rec, httptest.NewRequest("GET", "/schoolgate/health", nil))
		activeApp = prev
		var body struct {
			Healthy bool `json:"healthy"`
			Sites   []school.Health
		}
		if err != nil || json.Unmarshal(rec.Body.Bytes(), &body) != nil || len(body.Sites) != 1 {
			t.Fatalf("down=%v: %v %d %s", down, err, rec.Code, rec.Body)
		}
		want := http.StatusOK
		if down {
			want = http.StatusServiceUnavailable
		}
		if rec.Code != want || body.Healthy == down || (body.Sites[0].Store == "ok") == down {
			t.Errorf("down=%v: %d %s", down, rec.Code, rec.Body)
		}
	}
}
