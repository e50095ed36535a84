package caddymodule

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/catalog"
)

// downSite is a test site whose store has been closed after its token was
// minted: every store call fails as with a database that is down.
func downSite(t *testing.T) (*testSite, *bool) {
	t.Helper()
	ts := newTestSite(t, nil)
	s := ts.g.site
	s.extras.catalog = catalog.NewManager(ts.g.Issuer, s.store)
	if err := s.rebuildDocs(); err != nil {
		t.Fatal(err)
	}
	mcpServed := new(bool)
	var mcp http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { *mcpServed = true })
	s.extras.mcp.Store(&builtMCP{handler: mcp})
	app := &App{sites: map[string]*site{ts.g.Issuer: s}}
	prev := activeApp
	activeApp = func() (any, error) { return app, nil }
	t.Cleanup(func() { activeApp = prev })
	if err := s.store.Close(); err != nil {
		t.Fatal(err)
	}
	return ts, mcpServed
}

// With the store down, the protected resources, /mcp with a token and
// the JSON admin API answer 503 with Retry-After and the JSON error
// temporarily_unavailable: never a 401 that makes a client drop a good
// token, never a 500. Nothing is forwarded or served past the check.
func TestStoreFailureIsUnavailable(t *testing.T) {
	const issuer = "https://school.example"
	bearer := func(method, path string) func(ts *testSite) *http.Request {
		return func(ts *testSite) *http.Request {
			r := httptest.NewRequest(method, path, strings.NewReader(`{}`))
			r.Header.Set("Authorization", "Bearer "+ts.token)
			r.Header.Set("Content-Type", "application/json")
			return r
		}
	}
	admin := func(method, path, body string) func(*testSite) *http.Request {
		return func(*testSite) *http.Request {
			return httptest.NewRequest(method, path, strings.NewReader(body))
		}
	}
	cases := []struct {
		name    string
		request func(ts *testSite) *http.Request
		// handler is the admin API route; nil is the gateway.
		handler func(http.ResponseWriter, *http.Request) error
	}{
		{"Account API", bearer("POST", "/account/graphql"), nil},
		{"school admin API", bearer("GET", "/admin/api/courses"), nil},
		{"/mcp with a token", bearer("POST", "/mcp"), nil},
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
			ts, mcpServed := downSite(t)
			rec := httptest.NewRecorder()
			if tc.handler == nil {
				rec = ts.serve(t, tc.request(ts))
				if ts.upstream.header != nil || *mcpServed {
					t.Error("served past the token check")
				}
			} else if err := tc.handler(rec, tc.request(ts)); err != nil {
				t.Fatalf("answered with Caddy's error (%v), not the 503", err)
			}
			checkUnavailable(t, rec)
		})
	}
}

func checkUnavailable(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	h := rec.Header()
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503\n%s", rec.Code, rec.Body)
	}
	if h.Get("Retry-After") != "5" {
		t.Errorf("Retry-After %q, want 5", h.Get("Retry-After"))
	}
	if h.Get("WWW-Authenticate") != "" {
		t.Errorf("a 503 is no challenge: WWW-Authenticate %q", h.Get("WWW-Authenticate"))
	}
	if h.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", h.Get("Cache-Control"))
	}
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || h.Get("Content-Type") != "application/json" {
		t.Fatalf("not JSON (%q): %v\n%s", h.Get("Content-Type"), err, rec.Body)
	}
	if body["error"] != "temporarily_unavailable" || body["error_description"] == "" {
		t.Errorf("body %v", body)
	}
	if strings.Contains(rec.Body.String(), "database not open") {
		t.Errorf("the store's error reached the client: %s", rec.Body)
	}
}

// A catalog that could not be stored is the store failing, not a bad
// feed: 503, and the documents keep serving.
func TestCatalogRefreshStoreFailure(t *testing.T) {
	ts, _ := downSite(t)
	ts.g.Catalog = "../demoschool/catalog.json"
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/schoolgate/catalog/refresh", strings.NewReader(`{"issuer":"`+ts.g.Issuer+`"}`))
	if err := handleCatalogRefresh(rec, r); err != nil {
		t.Fatalf("answered with Caddy's error (%v), not the 503", err)
	}
	checkUnavailable(t, rec)
}

// Documents are not rebuilt as if MCP connections were off when the
// switch cannot be read: the previous ones keep serving.
func TestRebuildDocsKeepsDocumentsWhenTheSwitchIsUnreadable(t *testing.T) {
	ts, _ := downSite(t)
	s := ts.g.site
	before := s.extras.docs.Load()
	if err := s.rebuildDocs(); !isStoreFailure(err) {
		t.Errorf("rebuild: %v, want a store failure", err)
	}
	if s.extras.docs.Load() != before {
		t.Error("the documents were replaced")
	}
}

// The health check reports a store that does not read as unhealthy, with
// 503 for load balancers and monitors.
func TestHealthReportsTheStore(t *testing.T) {
	for _, down := range []bool{false, true} {
		ts := newTestSite(t, nil)
		app := &App{sites: map[string]*site{ts.g.Issuer: ts.g.site}}
		prev := activeApp
		activeApp = func() (any, error) { return app, nil }
		if down {
			if err := ts.g.site.store.Close(); err != nil {
				t.Fatal(err)
			}
		}
		rec := httptest.NewRecorder()
		err := handleHealth(rec, httptest.NewRequest("GET", "/schoolgate/health", nil))
		activeApp = prev
		var body struct {
			Healthy bool `json:"healthy"`
			Sites   []siteHealth
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
