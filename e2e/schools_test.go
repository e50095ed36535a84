package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// schoolStatus is one school of /schoolgate/sites.
type schoolStatus struct {
	Issuer           string     `json:"issuer"`
	KeyIDs           []string   `json:"key_ids"`
	Courses          int        `json:"courses"`
	Since            time.Time  `json:"since"`
	CatalogRefreshed *time.Time `json:"catalog_refreshed"`
	StoreBytes       int64      `json:"store_bytes"`
}

func schoolStatuses(t *testing.T, gw *gateway) map[string]schoolStatus {
	t.Helper()
	status, _, body := get(t, "http://"+gw.AdminAddr+"/schoolgate/sites")
	if status != 200 {
		t.Fatalf("sites: %d %s", status, body)
	}
	var list []schoolStatus
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]schoolStatus{}
	for _, s := range list {
		out[s.Issuer] = s
	}
	return out
}

// TestManySchoolsReload: of 200 schools in one Caddy, a reload that
// changes one rebuilds that one; the 199 others keep their state (built
// at the same moment as before, their catalog not fetched again, the
// same keys) and serve throughout.
func TestManySchoolsReload(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 200 schools")
	}
	const n = 200
	sch := startSchool(t)
	dir := t.TempDir()
	blocks := make([]string, n)
	used := map[int]bool{}
	for i := range blocks {
		port := freePort(t)
		for used[port] { // free now, and handed out again: not yet bound
			port = freePort(t)
		}
		used[port] = true
		blocks[i] = siteBlock(port, sch.URL, filepath.Join(dir, fmt.Sprintf("s%d", i)), "")
	}
	gw := startGateway(t, dir, blocks...)
	// Every school has fetched its catalog once.
	deadline := time.Now().Add(60 * time.Second)
	var before map[string]schoolStatus
	for {
		before = schoolStatuses(t, gw)
		ready := len(before) == n
		for _, s := range before {
			ready = ready && s.CatalogRefreshed != nil && s.Courses > 0
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the schools did not all import their catalog within 60 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	changed := gw.origins[7]
	blocks[7] = strings.Replace(blocks[7], "mcp_connections on", "mcp_connections on\n\t\tcode_ttl 30s", 1)
	gw.reload(blocks...)
	after := schoolStatuses(t, gw)
	if len(after) != n {
		t.Fatalf("%d schools after the reload, want %d", len(after), n)
	}
	for issuer, b := range before {
		a := after[issuer]
		if !slices.Equal(a.KeyIDs, b.KeyIDs) {
			t.Errorf("%s: keys %v, before %v", issuer, a.KeyIDs, b.KeyIDs)
		}
		if a.StoreBytes == 0 {
			t.Errorf("%s: no store size", issuer)
		}
		if issuer == changed {
			if !a.Since.After(b.Since) {
				t.Errorf("the changed school %s kept its state (since %v)", issuer, a.Since)
			}
			continue
		}
		if !a.Since.Equal(b.Since) || a.CatalogRefreshed == nil || !a.CatalogRefreshed.Equal(*b.CatalogRefreshed) {
			t.Errorf("%s was rebuilt by a reload that did not change it: since %v → %v, catalog %v → %v",
				issuer, b.Since, a.Since, b.CatalogRefreshed, a.CatalogRefreshed)
		}
	}
	for _, origin := range []string{gw.origins[0], changed, gw.origins[n-1]} {
		if status, _, _ := get(t, origin+"/.well-known/oauth-authorization-server"); status != 200 {
			t.Errorf("%s after the reload: %d", origin, status)
		}
	}

	// No school has a goroutine of its own but its port's listener (each
	// school here has a port; a host of many schools serves them on one):
	// the periodic work runs on one scheduler, and the schools share one
	// reverse proxy to their legacy server (Caddy's proxy keeps a metrics
	// goroutine per instance).
	var total, proxies int
	waitFor(t, "the old config's goroutines to end", func() bool {
		total, proxies = goroutines(t, gw)
		return total < n+50 && proxies == 1
	})
	t.Logf("%d goroutines for %d schools on %d ports", total, n, n)
}

// goroutines reads Caddy's goroutine profile: the total, and how many are
// a reverse proxy's upstream metrics loop (one per proxy instance).
func goroutines(t *testing.T, gw *gateway) (total, proxies int) {
	t.Helper()
	status, _, body := get(t, "http://"+gw.AdminAddr+"/debug/pprof/goroutine?debug=1")
	if status != 200 {
		t.Fatalf("goroutine profile: %d", status)
	}
	if _, err := fmt.Sscanf(string(body), "goroutine profile: total %d", &total); err != nil {
		t.Fatalf("goroutine profile: %v", err)
	}
	for _, block := range strings.Split(string(body), "\n\n") {
		if strings.Contains(block, "metricsUpstreamsHealthyUpdater") {
			var count int
			fmt.Sscanf(block, "%d @", &count)
			proxies += count
		}
	}
	return total, proxies
}
