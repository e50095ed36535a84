package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// schoolUsage is what the tests read of GET /schoolgate/usage.
type schoolUsage struct {
	LastActive *time.Time `json:"last_active"`
	Windows    map[string]struct {
		Requests  uint64            `json:"requests"`
		Refused   uint64            `json:"refused"`
		Status503 map[string]uint64 `json:"status_503"`
		P50MS     *float64          `json:"p50_ms"`
	} `json:"windows"`
}

// usageAt reads a school's usage from the admin API at adminAddr.
func usageAt(t *testing.T, adminAddr, issuer string) schoolUsage {
	t.Helper()
	status, _, body := get(t, "http://"+adminAddr+"/schoolgate/usage?issuer="+url.QueryEscape(issuer))
	if status != http.StatusOK {
		t.Fatalf("usage of %s: %d %s", issuer, status, body)
	}
	var u schoolUsage
	if err := json.Unmarshal(body, &u); err != nil {
		t.Fatalf("usage of %s: %v: %s", issuer, err, body)
	}
	return u
}

// stop ends Caddy as an operator's Ctrl-C or service stop does (SIGINT:
// the config is stopped and cleaned up) and waits for it to exit.
func (g *gateway) stop() {
	g.t.Helper()
	if err := g.proc.cmd.Process.Signal(os.Interrupt); err != nil {
		g.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = g.proc.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		g.t.Fatal("Caddy did not stop within 30 s of SIGINT")
	}
}

// protectedUnauthorized asks for the Account API without a token: a 401,
// counted as a refusal.
func protectedUnauthorized(t *testing.T, origin string) {
	t.Helper()
	resp, err := http.Post(origin+"/account/graphql", "application/json", strings.NewReader(viewerQuery))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
}

// TestUsageSurvivesRestart: what a school served is in its usage before
// anything is stored, and after Caddy stops (which stores the minute
// under way) and starts again on the same bbolt file; `caddy schoolgate
// usage` prints the same.
func TestUsageSurvivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs Caddy")
	}
	sch := startSchool(t)
	dir := t.TempDir()
	port := freePort(t)
	g := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "school"), ""))
	before := usageAt(t, g.AdminAddr, g.URL).Windows["1h"].Requests // startGateway's own
	for range 5 {
		if status, _, _ := get(t, g.URL+"/.well-known/oauth-authorization-server"); status != http.StatusOK {
			t.Fatalf("discovery: %d", status)
		}
	}
	protectedUnauthorized(t, g.URL)
	u := usageAt(t, g.AdminAddr, g.URL)
	if w := u.Windows["1h"]; w.Requests != before+6 || w.Refused != 1 || w.P50MS == nil || u.LastActive == nil {
		t.Fatalf("before the restart: %+v, last active %v; want %d requests", w, u.LastActive, before+6)
	}
	g.stop()
	g.restart() // its wait for the site is one request more
	u = usageAt(t, g.AdminAddr, g.URL)
	if w := u.Windows["1h"]; w.Requests != before+7 || w.Refused != 1 || u.LastActive == nil {
		t.Errorf("after the restart: %+v, last active %v; want %d requests", w, u.LastActive, before+7)
	}
	out, err := exec.Command(caddyBin, "schoolgate", "usage", "--address", g.AdminAddr, "--issuer", g.URL).CombinedOutput()
	var printed schoolUsage
	if err != nil || json.Unmarshal(out, &printed) != nil || printed.Windows["24h"].Requests != before+7 {
		t.Errorf("caddy schoolgate usage: %v\n%s", err, out)
	}
	out, err = exec.Command(caddyBin, "schoolgate", "usage", "--address", g.AdminAddr, "--issuer", "http://nobody.example").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "404") {
		t.Errorf("an unknown school: %v\n%s", err, out)
	}
}

// TestScaleOutUsage: two instances of one school on one PostgreSQL
// database give one view: what B served and stored (at its stop) and
// what A served and has not stored yet, read at A; and after both
// stopped, all of it from the database alone.
func TestScaleOutUsage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two Caddy processes and PostgreSQL")
	}
	sch := startSchool(t)
	dsn := pgcluster.Database(t)
	pa, pb := freePort(t), freePort(t)
	// A first: it makes the schema and the first key, B finds them. Each
	// start's wait for its site is one request of the school's.
	a := startGateway(t, t.TempDir(), pgSiteBlock(pa, pa, sch.URL, dsn, ""))
	b := startGateway(t, t.TempDir(), pgSiteBlock(pb, pa, sch.URL, dsn, ""))
	issuer := a.URL
	for range 4 {
		get(t, a.URL+"/.well-known/oauth-authorization-server")
	}
	for range 7 {
		get(t, b.URL+"/.well-known/oauth-authorization-server")
	}
	protectedUnauthorized(t, b.URL)
	b.stop()
	u := usageAt(t, a.AdminAddr, issuer)
	if w := u.Windows["5m"]; w.Requests != 1+4+1+7+1 || w.Refused != 1 || u.LastActive == nil {
		t.Errorf("at A, with B's stored: %+v; want %d requests and B's refusal", w, 1+4+1+7+1)
	}
	a.stop()
	a.restart()
	if w := usageAt(t, a.AdminAddr, issuer).Windows["1h"]; w.Requests != 1+4+1+7+1+1 || w.Refused != 1 {
		t.Errorf("from the database, after both stopped: %+v; want %d requests", w, 1+4+1+7+1+1)
	}
}
