package e2e

import (
	"encoding/json"
	"fmt"
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

// TestBrokenSchools: of many schools, a few have broken data (a store
// file that is not a database, a data directory that is a file, a catalog
// feed that does not parse). The others start and serve; the two whose
// store did not open answer 503 with the reason and pass public pages
// to the legacy site; health and sites name all three. A duplicate issuer
// is a configuration error that validate and reload name, and a reload
// after the data is fixed builds the school.
func TestBrokenSchools(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 40 schools")
	}
	const n = 40
	const corrupt, fileData, badCatalog = 3, 17, 29
	sch := startSchool(t)
	dir := t.TempDir()
	ports := make([]int, n)
	used := map[int]bool{}
	blocks := make([]string, n)
	for i := range blocks {
		for ports[i] = freePort(t); used[ports[i]]; ports[i] = freePort(t) {
		}
		used[ports[i]] = true
		data := filepath.Join(dir, fmt.Sprintf("s%d", i))
		switch i {
		case corrupt:
			mustWrite(t, filepath.Join(data, "school.db"), strings.Repeat("not a bbolt file ", 512))
		case fileData:
			data = filepath.Join(dir, "a-file")
			mustWrite(t, data, "this is a file, not a directory")
		}
		blocks[i] = siteBlock(ports[i], sch.URL, data, "")
		if i == badCatalog {
			feed := filepath.Join(dir, "bad-catalog.json")
			mustWrite(t, feed, `{"school": 1, "courses": "none"}`)
			blocks[i] = strings.Replace(blocks[i], "catalog "+sch.URL+"/catalog.json", "catalog "+feed, 1)
		}
	}
	origin := func(i int) string { return fmt.Sprintf("http://127.0.0.1:%d", ports[i]) }
	gw := &gateway{t: t, Dir: dir, AdminAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		config: filepath.Join(dir, "Caddyfile")}
	gw.write(blocks...)
	gw.proc = start(t, caddyBin, "run", "--config", gw.config, "--adapter", "caddyfile")
	for i := range n {
		if i != corrupt && i != fileData {
			waitHTTP(t, origin(i)+"/.well-known/oauth-authorization-server")
		}
	}

	for _, i := range []int{corrupt, fileData} {
		status, hdr, body := get(t, origin(i)+"/.well-known/oauth-authorization-server")
		var answer map[string]string
		if status != 503 || hdr.Get("Retry-After") == "" || json.Unmarshal(body, &answer) != nil ||
			answer["error"] != "temporarily_unavailable" || !strings.Contains(answer["error_description"], "store could not be opened") {
			t.Errorf("school %d with broken data: %d %s", i, status, body)
		}
		if strings.Contains(string(body), dir) {
			t.Errorf("school %d: the public answer shows the operator's paths: %s", i, body)
		}
		if status, _, _ := get(t, origin(i)+"/"); status != 200 {
			t.Errorf("school %d: the legacy site's home page should pass: %d", i, status)
		}
	}
	if status, _, _ := get(t, origin(badCatalog)+"/.well-known/oauth-authorization-server"); status != 200 {
		t.Errorf("a bad catalog feed must not stop the school: %d", status)
	}

	states := map[string]siteState{}
	status, _, body := get(t, "http://"+gw.AdminAddr+"/schoolgate/sites")
	var list []siteState
	if status != 200 || json.Unmarshal(body, &list) != nil || len(list) != n {
		t.Fatalf("sites: %d %s", status, body)
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
		t.Fatalf("health: %d %s", status, body)
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

	// A duplicate issuer is a configuration error: validate names it, a
	// reload to it fails and the running config keeps serving.
	dup := append([]string(nil), blocks...)
	dup[1] = strings.Replace(dup[1], fmt.Sprintf("issuer http://127.0.0.1:%d", ports[1]),
		fmt.Sprintf("issuer http://127.0.0.1:%d", ports[0]), 1)
	dupConfig := filepath.Join(dir, "Caddyfile.dup")
	gw.config = dupConfig
	gw.write(dup...)
	out, err := exec.Command(caddyBin, "validate", "--config", dupConfig, "--adapter", "caddyfile").CombinedOutput()
	if err == nil || !strings.Contains(string(out), origin(0)+" is configured in two site blocks") {
		t.Errorf("validate of a duplicate issuer: %v\n%s", err, out)
	}
	out, err = exec.Command(caddyBin, "reload", "--config", dupConfig, "--adapter", "caddyfile",
		"--address", gw.AdminAddr).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "two site blocks") {
		t.Errorf("reload to a duplicate issuer: %v\n%s", err, out)
	}
	if status, _, _ := get(t, origin(1)+"/.well-known/oauth-authorization-server"); status != 200 {
		t.Errorf("the running config stopped serving after a refused reload: %d", status)
	}

	// Fixed data and a reload: the school serves.
	if err := os.Remove(filepath.Join(dir, fmt.Sprintf("s%d", corrupt), "school.db")); err != nil {
		t.Fatal(err)
	}
	gw.config = filepath.Join(dir, "Caddyfile")
	gw.forceReload()
	if status, _, body := get(t, origin(corrupt)+"/.well-known/oauth-authorization-server"); status != 200 {
		t.Errorf("the repaired school after a reload: %d %s", status, body)
	}
	if status, _, _ := get(t, origin(fileData)+"/.well-known/oauth-authorization-server"); status != 503 {
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
