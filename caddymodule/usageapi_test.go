package caddymodule

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// usageAnswer is the JSON of GET /schoolgate/usage, as a client reads it.
type usageAnswer struct {
	Issuer     string  `json:"issuer"`
	LastActive *string `json:"last_active"`
	Windows    map[string]struct {
		From         string            `json:"from"`
		Requests     uint64            `json:"requests"`
		TokensIssued uint64            `json:"tokens_issued"`
		Refused      uint64            `json:"refused"`
		Status429    map[string]uint64 `json:"status_429"`
		Status503    map[string]uint64 `json:"status_503"`
		Status504    map[string]uint64 `json:"status_504"`
		P50MS        *float64          `json:"p50_ms"`
		P99MS        *float64          `json:"p99_ms"`
	} `json:"windows"`
}

func getUsage(t *testing.T, query string) (int, string, usageAnswer) {
	t.Helper()
	status, body := callAdmin(t, handleUsage, httptest.NewRequest("GET", "/schoolgate/usage?"+query, nil))
	var u usageAnswer
	if status == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &u); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
	}
	return status, body, u
}

// A site block's school's usage: what it served and refused, with every
// cause of each status listed, before any flush; every parameter it would
// not use is a 400 naming it, an unknown school a 404.
func TestUsageRoute(t *testing.T) {
	if _, err := caddy.GetModule("admin.api.schoolgate_usage"); err != nil {
		t.Fatalf("the route is not registered with Caddy's admin API: %v", err)
	}
	ts := newTestSite(t, nil)
	runningAs(t, &App{sites: map[string]*site{ts.g.Issuer: ts.site}})
	const school = "issuer=https%3A%2F%2Fschool.example"
	if status, body, u := getUsage(t, school); status != 200 || u.LastActive != nil || u.Windows["24h"].Requests != 0 ||
		u.Windows["5m"].P50MS != nil || !strings.Contains(body, `"p99_ms":null`) {
		t.Fatalf("a school that served nothing: %d %s", status, body)
	}
	serve := func(path, token string) {
		r := httptest.NewRequest("POST", path, nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		if err := ts.site.Serve(httptest.NewRecorder(), r, ts.upstream); err != nil {
			t.Fatal(err)
		}
	}
	serve("/account/graphql", ts.token)
	serve("/account/graphql", "")
	serve("/account/graphql", "sgat_unknown")
	status, body, u := getUsage(t, "issuer=HTTPS://School.Example:443")
	if status != 200 || u.Issuer != "https://school.example" || u.LastActive == nil {
		t.Fatalf("= %d %s", status, body)
	}
	for _, name := range []string{"5m", "1h", "24h"} {
		w := u.Windows[name]
		if w.Requests != 3 || w.Refused != 2 || w.TokensIssued != 0 || w.P50MS == nil || w.P99MS == nil || w.From == "" {
			t.Errorf("%s: %+v", name, w)
		}
		for status, causes := range map[int]map[string]uint64{429: w.Status429, 503: w.Status503, 504: w.Status504} {
			if _, ok := causes["total"]; !ok || len(causes) < 2 {
				t.Errorf("%s: status %d lists %v", name, status, causes)
			}
		}
		if _, ok := w.Status429["rate_limited"]; !ok {
			t.Errorf("%s: 429 lacks rate_limited: %v", name, w.Status429)
		}
		if _, ok := w.Status504["legacy_timeout"]; !ok {
			t.Errorf("%s: 504 lacks legacy_timeout: %v", name, w.Status504)
		}
	}
	for _, tt := range []struct {
		name, query string
		status      int
		has         string
	}{
		{"no school", "", 400, "issuer"},
		{"an empty issuer", "issuer=", 400, "issuer"},
		{"not an origin", "issuer=school.example%2Fpath", 400, "issuer:"},
		{"a path", "issuer=https%3A%2F%2Fschool.example%2Fx", 400, "issuer:"},
		{"unknown parameter", school + "&window=1h", 400, `unknown parameter "window"`},
		{"twice", school + "&" + school, 400, "give it once"},
		{"unknown school", "issuer=https%3A%2F%2Fother.example", 404, "no school with issuer https://other.example"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if status, body, _ := getUsage(t, tt.query); status != tt.status || !strings.Contains(body, tt.has) {
				t.Errorf("= %d %s, want %d with %s", status, body, tt.status, tt.has)
			}
		})
	}
	if status, _ := callAdmin(t, handleUsage, httptest.NewRequest("POST", "/schoolgate/usage?"+school, nil)); status != 405 {
		t.Errorf("POST /schoolgate/usage = %d", status)
	}
}

// A platform's school keeps its usage when it is let go of, and it is read
// from its store without building it; a school never built has none and
// gets no file; a store that cannot be read is a 503, not a 500.
func TestPlatformUsage(t *testing.T) {
	tp := newTestPlatform(t, 1)
	broken := tp.brokenData(t)
	for _, s := range []string{"a", "b", "c"} {
		tp.put(t, "https://"+s+".example", nil, "")
	}
	tp.put(t, "https://failed.example", nil, `,"data":`+strconv.Quote(broken))
	runningAs(t, tp.app)
	for range 3 {
		tp.do(t, "https://a.example"+discoveryPath)
	}
	tp.do(t, "https://b.example"+discoveryPath) // past max_active 1: a is let go of
	if st := tp.school("https://a.example").state(); st != "idle" {
		t.Fatalf("a is %s", st)
	}
	status, body, u := getUsage(t, "issuer=https://a.example")
	if status != 200 || u.Windows["1h"].Requests != 3 || u.LastActive == nil {
		t.Errorf("an idle school's usage = %d %s", status, body)
	}
	if st := tp.school("https://a.example").state(); st != "idle" {
		t.Errorf("reading its usage built it: %s", st)
	}
	if _, _, u := getUsage(t, "issuer=https://b.example"); u.Windows["5m"].Requests != 1 {
		t.Errorf("the active school's usage, not flushed yet: %+v", u.Windows["5m"])
	}
	status, body, u = getUsage(t, "issuer=https://c.example")
	if status != 200 || u.LastActive != nil || u.Windows["24h"].Requests != 0 {
		t.Errorf("a school never built = %d %s", status, body)
	}
	if _, err := os.Stat(tp.dataDir("https://c.example")); !os.IsNotExist(err) {
		t.Errorf("reading a school never built made its data directory: %v", err)
	}
	if status, body, _ := getUsage(t, "issuer=https://failed.example"); status != http.StatusServiceUnavailable ||
		!strings.Contains(body, "temporarily_unavailable") {
		t.Errorf("a store that cannot be read = %d %s", status, body)
	}
}

// `caddy schoolgate usage` prints the route's answer through Caddy's admin
// server; an unknown school and a missing --issuer are its errors.
func TestUsageCommand(t *testing.T) {
	tp := newTestPlatform(t, 1)
	tp.put(t, "https://a.example", nil, "")
	runningAs(t, tp.app)
	addr := runAdminServer(t)
	tp.do(t, "https://a.example"+discoveryPath)
	out, err := runCommand(t, "usage", "--address", addr, "--issuer", "https://A.example")
	if err != nil {
		t.Fatal(err)
	}
	var u usageAnswer
	if err := json.Unmarshal([]byte(out), &u); err != nil || u.Issuer != "https://a.example" || u.Windows["1h"].Requests != 1 {
		t.Errorf("usage printed %q (%v)", out, err)
	}
	if _, err := runCommand(t, "usage", "--address", addr, "--issuer", "https://nobody.example"); err == nil ||
		!strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("an unknown school: %v", err)
	}
	if _, err := runCommand(t, "usage", "--address", addr); err == nil || !strings.Contains(err.Error(), "HTTP 400") ||
		!strings.Contains(err.Error(), "issuer") {
		t.Errorf("no --issuer: %v", err)
	}
}
