package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/schoolgate/schoolgate/registry"
)

// openRegistryDir opens the registry dir a platform reads, from the
// test's side, as a deploy tool writes to it.
func openRegistryDir(t *testing.T, dir string) *registry.Dir {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.OpenDir(dir, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return reg
}

// platformClient sends every request to addr, whatever the URL's host,
// which it keeps as the Host header (and, over TLS, as the server name):
// schools of one platform share an address and differ by host.
func platformClient(addr string) *http.Client {
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	return &http.Client{
		Transport: &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
			DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}
}

// fetch GETs url with c and returns the answer.
func fetch(t *testing.T, c *http.Client, url string) response {
	t.Helper()
	r, err := tryFetch(c, url)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryFetch GETs url with c: an error is no answer (Caddy not listening
// yet).
func tryFetch(c *http.Client, url string) (response, error) {
	resp, err := c.Get(url)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, body}, nil
}

// putSchool writes a school's record in front of the demo school.
func putSchool(t *testing.T, reg registry.Registry, issuer, upstream string, disabled bool, extra string) {
	t.Helper()
	cfg := fmt.Sprintf(`{"upstream":%q,"mcp_connections":true%s}`, upstream, extra)
	if _, err := reg.Put(context.Background(), registry.Record{Issuer: issuer, Disabled: disabled, Config: json.RawMessage(cfg)}); err != nil {
		t.Fatal(err)
	}
}

// startPlatform runs Caddy with the Caddyfile text (global options and
// sites); the admin address is added.
func startPlatform(t *testing.T, dir, global, sites string) (admin string) {
	t.Helper()
	admin, _ = startPlatformLogged(t, dir, global, sites)
	return admin
}

// startPlatformLogged is startPlatform, and the process, whose output is
// Caddy's log.
func startPlatformLogged(t *testing.T, dir, global, sites string) (admin string, caddy *process) {
	t.Helper()
	admin = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := fmt.Sprintf("{\n\tadmin %s\n\tstorage file_system %s\n%s}\n\n%s", admin, filepath.Join(dir, "caddy-storage"), global, sites)
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, caddyfile.Format([]byte(cfg)), 0o600); err != nil {
		t.Fatal(err)
	}
	return admin, start(t, caddyBin, "run", "--config", path, "--adapter", "caddyfile")
}

// platformSite is a school of /schoolgate/sites.
type platformSite struct {
	State, Platform string
	Since           time.Time
}

// platformSites reads /schoolgate/sites, by issuer.
func platformSites(t *testing.T, admin string) map[string]platformSite {
	t.Helper()
	status, _, body := get(t, "http://"+admin+"/schoolgate/sites")
	var list []struct {
		Issuer string
		platformSite
	}
	if status != 200 || json.Unmarshal(body, &list) != nil {
		t.Fatalf("sites: %d %s", status, body)
	}
	out := map[string]platformSite{}
	for _, s := range list {
		out[s.Issuer] = s.platformSite
	}
	return out
}

// A real Caddy serves the schools of a registry dir behind one
// school_platform handler on one address: each school on its own host
// (discovery names it), a host of no school a plain 404; a school
// written, changed, disabled or removed in the registry while Caddy runs
// is served, rebuilt or answered 404 within the registry's watch delay,
// without a reload; the admin API lists every school by state; a reload
// keeps the schools in use as they are.
func TestPlatformDir(t *testing.T) {
	sch := startSchool(t)
	dir := t.TempDir()
	regDir := filepath.Join(dir, "registry")
	reg := openRegistryDir(t, regDir)
	port := freePort(t)
	origin := func(name string) string { return fmt.Sprintf("http://%s.test:%d", name, port) }
	putSchool(t, reg, origin("a"), sch.URL, false, "")
	putSchool(t, reg, origin("b"), sch.URL, false, "")
	putSchool(t, reg, origin("d"), sch.URL, false, fmt.Sprintf(`,"catalog":%q`, sch.URL+"/catalog.json"))
	admin := startPlatform(t, dir, "", fmt.Sprintf("http://:%d {\n\tschool_platform {\n\t\tregistry dir %s\n\t\tmax_active 10\n\t}\n}\n", port, regDir))
	c := platformClient(fmt.Sprintf("127.0.0.1:%d", port))
	discovery := func(name string) response {
		return fetch(t, c, origin(name)+"/.well-known/oauth-authorization-server")
	}
	issuerIs := func(name string) func() bool {
		return func() bool {
			r, err := tryFetch(c, origin(name)+"/.well-known/oauth-authorization-server")
			return err == nil && r.status == 200 && jsonOf(t, r.body)["issuer"] == origin(name)
		}
	}
	waitFor(t, "school a to serve", issuerIs("a"))
	waitFor(t, "school b to serve", issuerIs("b"))

	// A school with a catalog that no request has built: its first
	// request, for a document, waits for the first import of its feed
	// rather than answering an empty school, public for five minutes.
	if d := platformSites(t, admin)[origin("d")]; d.State != "idle" {
		t.Fatalf("the school with a catalog is %q before its first request, want idle", d.State)
	}
	checkWholeDocuments(t, c, origin("d"), readDemoFeed(t, sch.URL+"/catalog.json"))

	// A host of no school: a plain 404, nothing of a school.
	r := discovery("nobody")
	if r.status != 404 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") || r.header.Get("WWW-Authenticate") != "" ||
		strings.Contains(string(r.body), ".test") {
		t.Errorf("an unknown host: %d %v %s", r.status, r.header, r.body)
	}
	// The legacy site's pages pass, in the school's name.
	if r := fetch(t, c, origin("a")+"/"); r.status != 200 {
		t.Errorf("a's legacy home page: %d %s", r.status, r.body)
	}

	// Written while Caddy runs: served without a reload.
	putSchool(t, reg, origin("c"), sch.URL, false, "")
	waitFor(t, "the school written to serve", issuerIs("c"))
	// Changed: built anew (a later since), and serving.
	before := platformSites(t, admin)[origin("a")]
	putSchool(t, reg, origin("a"), sch.URL, false, `,"code_ttl":"30s"`)
	waitFor(t, "the changed school to be built anew", func() bool {
		a := platformSites(t, admin)[origin("a")]
		return a.State == "active" && a.Since.After(before.Since)
	})
	if !issuerIs("a")() {
		t.Error("the changed school does not serve")
	}
	// Disabled and removed: 404 from then on.
	putSchool(t, reg, origin("c"), sch.URL, true, "")
	for _, name := range []string{"b", "d"} {
		if err := reg.Remove(context.Background(), origin(name)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the disabled and removed schools to answer 404", func() bool {
		return discovery("b").status == 404 && discovery("c").status == 404 && discovery("d").status == 404
	})

	sites := platformSites(t, admin)
	for issuer, s := range sites {
		if s.Platform != "dir "+regDir {
			t.Errorf("%s: platform %q", issuer, s.Platform)
		}
	}
	if sites[origin("a")].State != "active" || sites[origin("c")].State != "disabled" || len(sites) != 2 {
		t.Errorf("sites: %+v", sites)
	}
	status, _, body := get(t, "http://"+admin+"/schoolgate/health")
	if status != 200 || !strings.Contains(string(body), `"schools":2`) {
		t.Errorf("health: %d %s", status, body)
	}
	// A platform's metrics are the instance's totals, no school's own.
	fetch(t, c, origin("a")+"/account/graphql") // a GET: refused by the policy, counted
	_, _, raw := get(t, "http://"+admin+"/metrics")
	if got := metricValue(t, string(raw), `schoolgate_protected_requests_total{outcome="denied_by_policy"}`); got != 1 ||
		strings.Contains(string(raw), "schoolgate_school_") {
		t.Errorf("metrics: denied_by_policy %v, want 1, and no school's series:\n%s", got, grepLines(string(raw), "schoolgate_"))
	}

	// A reload hands the schools in use to the new config as they are.
	out, err := exec.Command(caddyBin, "reload", "--force", "--config", filepath.Join(dir, "Caddyfile"),
		"--adapter", "caddyfile", "--address", admin).CombinedOutput()
	if err != nil {
		t.Fatalf("caddy reload: %v\n%s", err, out)
	}
	if a := platformSites(t, admin)[origin("a")]; a.State != "active" || !a.Since.Equal(sites[origin("a")].Since) {
		t.Errorf("the school in use after a reload: %+v, before %+v", a, sites[origin("a")])
	}
	if !issuerIs("a")() {
		t.Error("the school does not serve after a reload")
	}
}

// On-demand TLS with the schoolgate permission and Caddy's internal
// issuer: a handshake naming a registered school's host gets a
// certificate for it; one naming no school's host, or a school removed
// before it had one, gets none, and Caddy's log says so at INFO with the
// reason.
func TestPlatformCertificates(t *testing.T) {
	sch := startSchool(t)
	dir := t.TempDir()
	regDir := filepath.Join(dir, "registry")
	reg := openRegistryDir(t, regDir)
	httpsPort, httpPort := freePort(t), freePort(t)
	origin := func(name string) string { return fmt.Sprintf("https://%s.test:%d", name, httpsPort) }
	putSchool(t, reg, origin("a"), sch.URL, false, "")
	putSchool(t, reg, origin("gone"), sch.URL, false, "")
	global := fmt.Sprintf("\thttp_port %d\n\thttps_port %d\n\tskip_install_trust\n\ton_demand_tls {\n\t\tpermission schoolgate\n\t}\n", httpPort, httpsPort)
	admin, caddy := startPlatformLogged(t, dir, global, fmt.Sprintf("https:// {\n\ttls {\n\t\ton_demand\n\t\tissuer internal\n\t}\n\tschool_platform {\n\t\tregistry dir %s\n\t}\n}\n", regDir))
	addr := fmt.Sprintf("127.0.0.1:%d", httpsPort)
	handshake := func(name string) (*tls.ConnectionState, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr,
			&tls.Config{ServerName: name, InsecureSkipVerify: true})
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		st := conn.ConnectionState()
		return &st, nil
	}
	waitFor(t, "Caddy to read the registry", func() bool {
		resp, err := http.Get("http://" + admin + "/schoolgate/sites")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return len(platformSites(t, admin)) == 2
	})
	if err := reg.Remove(context.Background(), origin("gone")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the removal to be read", func() bool { return len(platformSites(t, admin)) == 1 })
	waitFor(t, "a certificate for the registered school", func() bool {
		st, err := handshake("a.test")
		return err == nil && len(st.PeerCertificates) > 0 && st.PeerCertificates[0].VerifyHostname("a.test") == nil
	})
	if r := fetch(t, platformClient(addr), origin("a")+"/.well-known/oauth-authorization-server"); r.status != 200 ||
		jsonOf(t, r.body)["issuer"] != origin("a") {
		t.Errorf("the school over TLS: %d %s", r.status, r.body)
	}
	for _, name := range []string{"nobody.test", "gone.test"} {
		if _, err := handshake(name); err == nil {
			t.Errorf("%s got a certificate", name)
		}
	}
	for _, name := range []string{"nobody.test", "gone.test"} {
		want := `"logger":"tls.permission.schoolgate","msg":"on-demand certificate refused","host":"` + name +
			`","reason":"not registered: no school of the registry answers on it"`
		// Caddy's output reaches the test through a pipe, after the
		// handshake's failure may have.
		waitFor(t, "a line in Caddy's log at INFO with "+want, func() bool {
			for _, line := range strings.Split(caddy.out.String(), "\n") {
				if strings.Contains(line, want) && strings.HasPrefix(line, `{"level":"info"`) {
					return true
				}
			}
			return false
		})
	}
}
