package caddymodule

import (
	"encoding/json"
	"errors"
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
	g := &Gateway{Upstream: "http://127.0.0.1:9080", Issuer: "https://school.example"}
	g.setDefaults()
	cause := errors.New("data: opening /var/lib/schools/a/school.db: invalid database")
	g.failed = newFailedSite(g, &loadFailure{public: "its store could not be opened", err: cause})
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

// A failed school keeps its issuer: a second site block of it is refused
// as for a serving one, and the admin API lists it with the reason.
func TestFailedSiteInAdminAPI(t *testing.T) {
	ts := newTestSite(t, nil)
	app := &App{}
	if err := app.register(ts.g.site); err != nil {
		t.Fatal(err)
	}
	bad := &Gateway{Upstream: "http://127.0.0.1:9080", Issuer: "https://broken.example"}
	bad.setDefaults()
	f := newFailedSite(bad, &loadFailure{public: "its store could not be opened", err: errors.New("data: invalid database")})
	if err := app.registerFailed(f); err != nil {
		t.Fatal(err)
	}
	twin := newFailedSite(bad, f.failure.Load())
	if err := app.registerFailed(twin); err == nil || !strings.Contains(err.Error(), "two site blocks") {
		t.Fatalf("a second block of a failed issuer: %v", err)
	}
	if err := app.register(&site{Site: ts.g.site.Site, gateway: bad, stored: ts.g.site.stored}); err == nil {
		// The school has the test issuer, which is registered already.
		t.Fatal("a second block of a serving issuer must be refused")
	}
	prev := activeApp
	activeApp = func() (any, error) { return app, nil }
	t.Cleanup(func() { activeApp = prev })

	rec := httptest.NewRecorder()
	if err := handleSites(rec, httptest.NewRequest(http.MethodGet, "/schoolgate/sites", nil)); err != nil {
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
// ones, once, and only if its bbolt file is not another school's.
func TestAppRebuilt(t *testing.T) {
	ts := newTestSite(t, nil)
	app := &App{}
	f := newFailedSite(ts.g, &loadFailure{public: "its store could not be opened", err: errors.New("data: locked")})
	if err := app.registerFailed(f); err != nil {
		t.Fatal(err)
	}
	if got := f.retryAfter(); got != int(firstRebuild/time.Second) {
		t.Errorf("Retry-After %d before the first rebuild, want %d", got, int(firstRebuild/time.Second))
	}

	otherGateway := &Gateway{Upstream: "http://127.0.0.1:9080", Issuer: "https://other.example"}
	otherGateway.setDefaults()
	// The other school's store is the same file.
	other := buildTestSite(t, otherGateway, ts.g.site.stored)
	otherFailed := newFailedSite(otherGateway, f.failure.Load())
	if err := app.registerFailed(otherFailed); err != nil {
		t.Fatal(err)
	}

	if err := app.rebuilt(f, ts.g.site); err != nil {
		t.Fatal(err)
	}
	if s, ok := app.Site(ts.g.Issuer); !ok || s != ts.g.site || len(app.Failed()) != 1 {
		t.Fatalf("the rebuilt school serves and is no longer failed: %v %d", ok, len(app.Failed()))
	}
	if err := app.rebuilt(f, ts.g.site); !errors.Is(err, errNotFailed) {
		t.Errorf("a second move of the same school: %v", err)
	}
	if err := app.rebuilt(otherFailed, other); err == nil || !strings.Contains(err.Error(), "own data directory") {
		t.Errorf("a rebuilt school on another school's file: %v", err)
	}
	if len(app.Failed()) != 1 {
		t.Error("a refused move keeps the school failed")
	}
}
