package caddymodule

import (
	"encoding/json"
	"github.com/schoolgate/schoolgate/school"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// A record of a site block's issuer is failed, with a reason naming the
// site block, from the registry's first read on: nothing of it is built,
// its aliases answer 503, the admin API operates on the site block's
// school; so is a record added later whose data directory is a site
// block's, once a request tries to build it.
func TestPlatformSiteBlockWins(t *testing.T) {
	ts := newTestSite(t, nil)
	siteBlockData := t.TempDir()
	other := &Gateway{Options: school.Options{Issuer: "https://other.example", Upstream: "http://127.0.0.1:9"}, Data: siteBlockData}
	other.SetDefaults()
	tp := newTestPlatform(t, 10, func(tp *testPlatform) {
		// Site blocks as register records them, started (ts) or not.
		tp.app.issuers = map[string]*Gateway{ts.g.Issuer: ts.g, other.Issuer: other}
		tp.app.dataFiles = map[string]*Gateway{other.dataPath(): other}
		tp.app.serving(ts.site)
		tp.put(t, ts.g.Issuer, []string{"www.school.example"}, "")
	})
	tp.put(t, "https://good.example", nil, "")
	tp.put(t, "https://twin.example", nil, `,"data":`+strconv.Quote(siteBlockData))
	runningAs(t, tp.app)

	e := tp.school(ts.g.Issuer)
	if f := e.Failed(); e.state() != "failed" || !strings.Contains(f.failure.Load().Error(), "school_gateway site block") {
		t.Fatalf("the record of a site block's issuer is %s", e.state())
	}
	for _, url := range []string{"https://www.school.example/courses", "https://www.school.example" + discoveryPath} {
		if rec := tp.do(t, url); rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), "site block") {
			t.Errorf("%s: %d %s, want a 503 that does not describe the config", url, rec.Code, rec.Body)
		}
	}
	if storeOpen(tp.dataFile(ts.g.Issuer)) || tp.upstream.holds(ts.g.Issuer) != 0 {
		t.Error("the record of a site block's issuer was built")
	}
	if s, release, err := siteOf(httptest.NewRecorder(), ts.g.Issuer); err != nil || s != ts.site {
		t.Errorf("the admin API's school of the issuer: %v, not the site block's", err)
	} else {
		release()
	}

	if rec := tp.do(t, "https://twin.example"+discoveryPath); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("a record on a site block's data directory: %d %s", rec.Code, rec.Body)
	}
	if f := tp.school("https://twin.example").Failed(); f == nil || !strings.Contains(f.failure.Load().Error(), "site block of https://other.example") {
		t.Errorf("a record on a site block's data directory is %s", tp.school("https://twin.example").state())
	}
	if got := issuerOf(tp.do(t, "https://good.example"+discoveryPath)); got != "https://good.example" {
		t.Errorf("good: %q", got)
	}

	rec := httptest.NewRecorder()
	if err := handleHealth(rec, httptest.NewRequest(http.MethodGet, "/schoolgate/health", nil)); err != nil {
		t.Fatal(err)
	}
	var health struct {
		Platforms []platformSummary `json:"platforms"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &health); err != nil || rec.Code != http.StatusOK ||
		len(health.Platforms) != 1 || health.Platforms[0].Failed != 2 {
		t.Errorf("health: %d %s", rec.Code, rec.Body)
	}
}
