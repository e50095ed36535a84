package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A school whose data failed to load is built again in the background:
// once what failed is repaired it serves, with no reload.
func TestFailedSchoolRebuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for rebuilds in the background")
	}
	sch := startSchool(t)
	const discovery = "/.well-known/oauth-authorization-server"

	// The data directory is a file: the store cannot be created.
	t.Run("repaired data", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "site")
		mustWrite(t, data, "a file where the data directory belongs")
		gw := launchGateway(t, dir, siteBlock(freePort(t), sch.URL, data, ""))
		waitFor(t, "the school to answer 503", func() bool { return status(gw.URL+discovery) == 503 })
		_, hdr, _ := get(t, gw.URL+discovery)
		if ra := hdr.Get("Retry-After"); ra == "" || ra == "0" || len(ra) > 3 {
			t.Errorf("Retry-After %q: the wait for the next rebuild, in seconds", ra)
		}
		if err := os.Remove(data); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the repaired school to serve", func() bool { return status(gw.URL+discovery) == 200 })
		if state := siteStateOf(t, gw, gw.URL); state.State == "failed" {
			t.Errorf("sites still lists the rebuilt school as failed: %+v", state)
		}
		assertMCPServes(t, gw.URL)
	})

	// A second Caddy on the same data directory, as in a restart whose
	// old process has not let go yet: the new one's school fails on the
	// locked store, then serves once the old process is gone.
	t.Run("store held by another process", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "site")
		old := startGateway(t, filepath.Join(dir, "old"), siteBlock(freePort(t), sch.URL, data, ""))
		port := freePort(t)
		// The new Caddy listens elsewhere but is the same school.
		block := strings.Replace(siteBlock(port, sch.URL, data, ""), fmt.Sprintf("issuer http://127.0.0.1:%d", port),
			"issuer "+old.URL, 1)
		gw := launchGateway(t, filepath.Join(dir, "new"), block)
		waitFor(t, "the school to answer 503 while the old Caddy holds its store", func() bool {
			return status(gw.URL+discovery) == 503
		})
		if state := siteStateOf(t, gw, old.URL); state.State != "failed" || !strings.Contains(state.Reason, "locked") {
			t.Errorf("sites: %+v, want failed on the locked store", state)
		}
		old.kill()
		waitFor(t, "the school to serve once the old Caddy is gone", func() bool { return status(gw.URL+discovery) == 200 })
		_, _, body := get(t, gw.URL+discovery)
		var meta struct {
			Issuer string `json:"issuer"`
		}
		if json.Unmarshal(body, &meta) != nil || meta.Issuer != old.URL {
			t.Errorf("discovery of the rebuilt school: %s", body)
		}
	})
}

// status is the status of a GET of url, 0 when it could not be fetched.
func status(url string) int {
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// siteStateOf is a school's entry in /schoolgate/sites.
func siteStateOf(t *testing.T, gw *gateway, issuer string) siteState {
	t.Helper()
	_, _, body := get(t, "http://"+gw.AdminAddr+"/schoolgate/sites")
	var list []siteState
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("sites: %v: %s", err, body)
	}
	for _, s := range list {
		if s.Issuer == issuer {
			return s
		}
	}
	t.Fatalf("sites does not list %s: %s", issuer, body)
	return siteState{}
}

// assertMCPServes checks that the school's MCP server answers a catalog
// search with results.
func assertMCPServes(t *testing.T, origin string) {
	t.Helper()
	if got := callTool(t, origin+"/mcp", "search_catalog", map[string]any{"query": "photography"}); !strings.Contains(got, `"slug"`) {
		t.Errorf("search_catalog of the rebuilt school: %s", got)
	}
}
