package caddymodule

import (
	"encoding/json"
	"errors"
	"github.com/schoolgate/schoolgate/school"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A school whose data failed to load answers 503 with the reason on
// everything the gateway owns or protects, keeps the reason's paths for
// the operator, and leaves the legacy site's public pages reachable.
func TestFailedSiteAnswers(t *testing.T) {
	g := &Gateway{Options: school.Options{Upstream: "http://127.0.0.1:9080", Issuer: "https://school.example"}}
	g.SetDefaults()
	cause := errors.New("data: opening /var/lib/schools/a/school.db: invalid database")
	g.run = newGatewayRun()
	g.run.Set(&gatewayState{failed: newFailedSite(g, &school.BuildError{Reason: "its store could not be opened", Err: cause})})
	tests := []struct {
		path, auth string
		passed     bool
	}{
		{path: "/.well-known/oauth-authorization-server"},
		{path: "/oauth/authorize?client_id=x"},
		{path: "/api/oauth/token"},
		{path: "/mcp"},
		{path: "/llms.txt"},
		{path: "/account/graphql", auth: "Bearer sgat_x"},
		{path: "/admin/api/courses"},
		{path: "/ADMIN/api/courses"},
		{path: "/courses/portrait", auth: "Bearer sgat_x", passed: true},
		{path: "/", passed: true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			next := &recordingNext{}
			r := httptest.NewRequest(http.MethodGet, tt.path, nil)
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			if err := g.ServeHTTP(rec, r, next); err != nil {
				t.Fatal(err)
			}
			if tt.passed {
				if next.header == nil || next.header.Get("Authorization") != "" {
					t.Fatalf("a public page goes to the legacy site, without the bearer token: %v", next.header)
				}
				return
			}
			if next.header != nil {
				t.Fatal("a gateway path of a failed school must not reach the legacy site")
			}
			var body map[string]string
			if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
				json.Unmarshal(rec.Body.Bytes(), &body) != nil || body["error"] != "temporarily_unavailable" {
				t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
			}
			if !strings.Contains(body["error_description"], "its store could not be opened") ||
				strings.Contains(rec.Body.String(), "/var/lib") {
				t.Fatalf("the reason, without the operator's paths: %s", body["error_description"])
			}
		})
	}
}

// A failed school keeps its issuer and is listed by the admin API with
// the reason.
func TestFailedSiteInAdminAPI(t *testing.T) {
	ts := newTestSite(t, nil)
	app := &App{}
	app.serving(ts.site)
	bad := &Gateway{Options: school.Options{Upstream: "http://127.0.0.1:9080", Issuer: "https://broken.example"}}
	bad.SetDefaults()
	app.failing(newFailedSite(bad, &school.BuildError{Reason: "its store could not be opened", Err: errors.New("data: invalid database")}))
	prev := activeApp
	activeApp = func() (any, error) { return app, nil }
	t.Cleanup(func() { activeApp = prev })

	rec := httptest.NewRecorder()
	if err := handleRunning(rec, httptest.NewRequest(http.MethodGet, "/schoolgate/running", nil)); err != nil {
		t.Fatal(err)
	}
	var sites []siteStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &sites); err != nil || len(sites) != 2 {
		t.Fatalf("%v %s", err, rec.Body)
	}
	byIssuer := map[string]siteStatus{}
	for _, s := range sites {
		byIssuer[s.Issuer] = s
	}
	good := byIssuer[ts.g.Issuer]
	if b := byIssuer["https://broken.example"]; b.State != "failed" || !strings.Contains(b.Reason, "invalid database") ||
		b.NextTry == nil || b.NextTry.Before(b.Since) {
		t.Errorf("the failed school, with when it is built again: %+v", b)
	}
	if good.NextTry != nil {
		t.Errorf("a running school has no next try: %+v", good)
	}
	if good.State != "lazy" || good.LiveGrants == nil || *good.LiveGrants != 1 {
		t.Errorf("the running school is lazy with its one live grant: %+v", good)
	}

	rec = httptest.NewRecorder()
	if err := handleHealth(rec, httptest.NewRequest(http.MethodGet, "/schoolgate/health", nil)); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "https://broken.example") ||
		!strings.Contains(rec.Body.String(), "invalid database") {
		t.Errorf("health names the failed school and why: %d %s", rec.Code, rec.Body)
	}
}

// A rebuilt school moves from the App's failed schools to its serving
// ones, once.
func TestAppRebuilt(t *testing.T) {
	ts := newTestSite(t, nil)
	app := &App{}
	f := newFailedSite(ts.g, &school.BuildError{Reason: "its store could not be opened", Err: errors.New("data: locked")})
	app.failing(f)
	if got := f.retryAfter(); got != int(firstRebuild/time.Second) {
		t.Errorf("Retry-After %d before the first rebuild, want %d", got, int(firstRebuild/time.Second))
	}
	if err := app.rebuilt(f, ts.site); err != nil {
		t.Fatal(err)
	}
	if s, ok := app.Site(ts.g.Issuer); !ok || s != ts.site || len(app.Failed()) != 0 {
		t.Fatalf("the rebuilt school serves and is no longer failed: %v %d", ok, len(app.Failed()))
	}
	if err := app.rebuilt(f, ts.site); !errors.Is(err, errNotFailed) {
		t.Errorf("a second move of the same school: %v", err)
	}
}

// Provision registers each school with the App, which refuses a second
// site block of an issuer, serving or failed, and a bbolt file another
// school uses; a database is shared by issuer.
func TestAppRegister(t *testing.T) {
	dir := t.TempDir()
	gateway := func(issuer, data string, pg bool) *Gateway {
		g := &Gateway{Options: school.Options{Upstream: "http://127.0.0.1:9080", Issuer: issuer}, Data: data}
		if pg {
			g.Data, g.Store = "", &StoreConfig{Postgres: &PostgresStore{DSN: "host=/tmp", KeySecret: "k"}}
		}
		g.SetDefaults()
		return g
	}
	app := &App{}
	for _, g := range []*Gateway{gateway("https://a.example", dir+"/a", false), gateway("https://b.example", dir+"/b", false),
		gateway("https://c.example", "", true), gateway("https://d.example", "", true)} {
		if err := app.register(g); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		g    *Gateway
		want string
	}{
		{gateway("https://a.example", dir+"/other", false), "https://a.example is configured in two site blocks"},
		{gateway("https://c.example", dir+"/other", false), "https://c.example is configured in two site blocks"},
		{gateway("https://e.example", dir+"/a/", false), "is used by https://a.example and https://e.example; each school needs its own data directory"},
	} {
		if err := app.register(tt.g); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s on %s: %v, want %q", tt.g.Issuer, tt.g.Data, err, tt.want)
		}
	}
	if len(app.gateways) != 4 {
		t.Errorf("%d schools registered, want the 4 accepted", len(app.gateways))
	}
}
