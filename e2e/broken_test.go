package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// siteState is one school of /schoolgate/sites with its state.
type siteState struct {
	Issuer string `json:"issuer"`
	State  string `json:"state"`
	Reason string `json:"reason"`
}

// TestBrokenSchools: of a thousand schools on one port, a few have broken
// data (a store file that is not a database, a data directory that is a
// file, a catalog feed that does not parse). The others start and serve;
// the two whose store did not open answer 503 with the reason and pass
// public pages to the legacy site; health and sites name all three.
// caddy validate beside the running Caddy opens none of its stores. A
// duplicate issuer is a configuration error that validate and reload
// name, and a reload after the data is fixed builds the school.
func TestBrokenSchools(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a thousand schools")
	}
	const n = 1000
	const corrupt, fileData, badCatalog = 3, 517, 929
	sch := startSchool(t)
	dir := t.TempDir()
	port := freePort(t)
	origin := func(i int) string { return fmt.Sprintf("http://s%d.localhost:%d", i, port) }
	blocks := make([]string, n)
	for i := range blocks {
		data := filepath.Join(dir, fmt.Sprintf("s%d", i))
		switch i {
		case corrupt:
			mustWrite(t, filepath.Join(data, "school.db"), strings.Repeat("not a bbolt file ", 512))
		case fileData:
			data = filepath.Join(dir, "a-file")
			mustWrite(t, data, "this is a file, not a directory")
		}
		feed := sch.URL + "/catalog.json"
		if i == badCatalog {
			feed = filepath.Join(dir, "bad-catalog.json")
			mustWrite(t, feed, `{"school": 1, "courses": "none"}`)
		}
		blocks[i] = fmt.Sprintf("%s {\n\tschool_gateway %s {\n\t\tissuer %s\n\t\tdata %s\n\t\tcatalog %s\n\t}\n}\n",
			origin(i), sch.URL, origin(i), data, feed)
	}
	// Every school is a host on one port; the client dials that port
	// whatever the name.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", port))
		}}}
	fetch := func(url string) (int, http.Header, []byte) {
		t.Helper()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, body
	}
	gw := launchGateway(t, dir, blocks...)
	discovery := "/.well-known/oauth-authorization-server"
	waitFor(t, "the first school to serve", func() bool {
		resp, err := client.Get(origin(0) + discovery)
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	for i := range n {
		if i == corrupt || i == fileData {
			continue
		}
		if status, _, body := fetch(origin(i) + discovery); status != 200 {
			t.Fatalf("school %d does not serve: %d %s", i, status, body)
		}
	}

	for _, i := range []int{corrupt, fileData} {
		status, hdr, body := fetch(origin(i) + discovery)
		var answer map[string]string
		if status != 503 || hdr.Get("Retry-After") == "" || json.Unmarshal(body, &answer) != nil ||
			answer["error"] != "temporarily_unavailable" || !strings.Contains(answer["error_description"], "store could not be opened") {
			t.Errorf("school %d with broken data: %d %s", i, status, body)
		}
		if strings.Contains(string(body), dir) {
			t.Errorf("school %d: the public answer shows the operator's paths: %s", i, body)
		}
		if status, _, _ := fetch(origin(i) + "/"); status != 200 {
			t.Errorf("school %d: the legacy site's home page should pass: %d", i, status)
		}
	}
	if status, _, _ := fetch(origin(badCatalog) + discovery); status != 200 {
		t.Errorf("a bad catalog feed must not stop the school: %d", status)
	}

	states := map[string]siteState{}
	status, _, body := get(t, "http://"+gw.AdminAddr+"/schoolgate/sites")
	var list []siteState
	if status != 200 || json.Unmarshal(body, &list) != nil || len(list) != n {
		t.Fatalf("sites: %d, %d schools", status, len(list))
	}
	for _, s := range list {
		states[s.Issuer] = s
	}
	for _, i := range []int{corrupt, fileData} {
		if s := states[origin(i)]; s.State != "failed" || s.Reason == "" {
			t.Errorf("sites for school %d: %+v", i, s)
		}
	}
	if s := states[origin(0)]; s.State != "lazy" && s.State != "serving" {
		t.Errorf("a good school: %+v", s)
	}

	// Health names the three, each with its reason; the catalog's needs
	// the failed import to have happened.
	waitFor(t, "health to name the school whose feed does not parse", func() bool {
		_, _, body := get(t, "http://"+gw.AdminAddr+"/schoolgate/health")
		return strings.Contains(string(body), "import failing")
	})
	status, _, body = get(t, "http://"+gw.AdminAddr+"/schoolgate/health")
	var health struct {
		Healthy bool `json:"healthy"`
		Sites   []struct {
			Issuer  string `json:"issuer"`
			Healthy bool   `json:"healthy"`
			Store   string `json:"store"`
			Catalog string `json:"catalog"`
		} `json:"sites"`
	}
	if status != 503 || json.Unmarshal(body, &health) != nil || health.Healthy || len(health.Sites) != n {
		t.Fatalf("health: %d, %d schools", status, len(health.Sites))
	}
	for _, h := range health.Sites {
		switch h.Issuer {
		case origin(corrupt), origin(fileData):
			if h.Healthy || !strings.Contains(h.Store, "failed to load") {
				t.Errorf("health of a school whose store did not open: %+v", h)
			}
		case origin(badCatalog):
			if h.Healthy || !strings.Contains(h.Catalog, "import failing") {
				t.Errorf("health of the school whose feed does not parse: %+v", h)
			}
		default:
			if !h.Healthy {
				t.Errorf("a good school is unhealthy: %+v", h)
			}
		}
	}

	// caddy validate of the running config beside the running Caddy opens
	// no store: it waits on none of their locks and says nothing of the
	// schools' data (it used to log each school as failed to load, its
	// store being the running Caddy's).
	began := time.Now()
	out, err := exec.Command(caddyBin, "validate", "--config", gw.config, "--adapter", "caddyfile").CombinedOutput()
	took := time.Since(began)
	if err != nil || !strings.Contains(string(out), "Valid configuration") ||
		strings.Contains(string(out), "failed to load") || strings.Contains(string(out), "locked") {
		t.Errorf("validate of the running config: %v\n%.2000s", err, out)
	}
	t.Logf("caddy validate of %d schools beside the running Caddy: %v", n, took.Round(time.Millisecond))

	// A duplicate issuer is a configuration error: validate names it, a
	// reload to it fails and the running config keeps serving.
	dup := append([]string(nil), blocks...)
	dup[1] = strings.Replace(dup[1], "issuer "+origin(1), "issuer "+origin(0), 1)
	dupConfig := filepath.Join(dir, "Caddyfile.dup")
	gw.config = dupConfig
	gw.write(dup...)
	out, err = exec.Command(caddyBin, "validate", "--config", dupConfig, "--adapter", "caddyfile").CombinedOutput()
	if err == nil || !strings.Contains(string(out), origin(0)+" is configured in two site blocks") {
		t.Errorf("validate of a duplicate issuer: %v\n%.2000s", err, out)
	}
	out, err = exec.Command(caddyBin, "reload", "--config", dupConfig, "--adapter", "caddyfile",
		"--address", gw.AdminAddr).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "two site blocks") {
		t.Errorf("reload to a duplicate issuer: %v\n%.2000s", err, out)
	}
	if status, _, _ := fetch(origin(1) + discovery); status != 200 {
		t.Errorf("the running config stopped serving after a refused reload: %d", status)
	}

	// Fixed data and a reload: the school serves.
	if err := os.Remove(filepath.Join(dir, fmt.Sprintf("s%d", corrupt), "school.db")); err != nil {
		t.Fatal(err)
	}
	gw.config = filepath.Join(dir, "Caddyfile")
	gw.forceReload()
	if status, _, body := fetch(origin(corrupt) + discovery); status != 200 {
		t.Errorf("the repaired school after a reload: %d %s", status, body)
	}
	if status, _, _ := fetch(origin(fileData) + discovery); status != 503 {
		t.Errorf("the school still broken after the reload: %d", status)
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond for up to 30 s: what it waits for happens in the
// background (a scheduled import), and a loaded machine may be slow.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
