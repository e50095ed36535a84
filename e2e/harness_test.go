// Package e2e runs the real gateway: a Caddy built from cmd/caddy with the
// schoolgate modules, in front of the demo school from cmd/demoschool,
// spoken to over real HTTP.
package e2e

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/schooltest"
)

var (
	caddyBin  string
	schoolBin string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// The fast loop (go test -short ./...) skips the Caddy builds and
		// every test here; scripts/test.sh runs them.
		fmt.Println("e2e: skipped in -short mode (they build and run a real Caddy)")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "schoolgate-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	caddyBin = filepath.Join(dir, "caddy")
	schoolBin = filepath.Join(dir, "demoschool")
	for bin, pkg := range map[string]string{caddyBin: "../cmd/caddy", schoolBin: "../cmd/demoschool"} {
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", pkg, ":", err)
			os.Exit(1)
		}
	}
	// Caddy autosaves its config and keeps data under the user's
	// directories; the tests must not touch the real ones.
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg-config"))
	os.Setenv("XDG_DATA_HOME", filepath.Join(dir, "xdg-data"))
	// pgcluster.Main runs the tests and stops the PostgreSQL server that
	// the tests of sites kept in a database start.
	code := pgcluster.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// freePort returns a loopback port nobody listens on right now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// process runs a binary until the test ends, keeping its output for
// failure reports.
type process struct {
	cmd *exec.Cmd
	out *schooltest.Buffer
}

func start(t testing.TB, name string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(name, args...), out: new(schooltest.Buffer)}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(name), p.out.String())
		}
	})
	return p
}

// waitHTTP polls url until it answers with a status below 500.
func waitHTTP(t testing.TB, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not come up", url)
}

// school is a running demo school.
type school struct {
	URL string
}

func startSchool(t testing.TB) *school {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	start(t, schoolBin, "-listen", addr)
	s := &school{URL: "http://" + addr}
	waitHTTP(t, s.URL+"/healthz")
	return s
}

// gateway is a running Caddy with the schoolgate modules.
type gateway struct {
	t         testing.TB
	URL       string // the first site's origin
	AdminAddr string
	Dir       string
	config    string
	origins   []string // every site's origin, in order
	proc      *process
}

// siteBlock renders a site block for a school on a port.
func siteBlock(port int, upstream, dataDir, extra string) string {
	return fmt.Sprintf(`http://127.0.0.1:%d {
	school_gateway %s {
		issuer http://127.0.0.1:%d
		data %s
		catalog %s/catalog.json
		mcp_connections on
		metadata_documents {
			allow_hosts *
			allow_private_networks
		}
%s
	}
}
`, port, upstream, port, dataDir, upstream, extra)
}

// startGateway runs Caddy with the given site blocks and waits for every
// site to serve.
func startGateway(t testing.TB, dir string, sites ...string) *gateway {
	t.Helper()
	g := launchGateway(t, dir, sites...)
	g.waitSites()
	return g
}

// launchGateway writes the Caddyfile of the site blocks into dir (created
// if need be) and starts Caddy on it without waiting for the sites: for
// tests of schools that answer 503 at first.
func launchGateway(t testing.TB, dir string, sites ...string) *gateway {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	g := &gateway{t: t, Dir: dir, AdminAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	g.config = filepath.Join(dir, "Caddyfile")
	g.write(sites...)
	for _, s := range sites {
		g.origins = append(g.origins, strings.TrimSpace(strings.SplitN(s, "{", 2)[0]))
	}
	g.URL = g.origins[0]
	g.launch()
	return g
}

// run starts Caddy on the current Caddyfile and waits for every site.
func (g *gateway) run() {
	g.t.Helper()
	g.launch()
	g.waitSites()
}

func (g *gateway) launch() {
	g.proc = start(g.t, caddyBin, "run", "--config", g.config, "--adapter", "caddyfile")
}

func (g *gateway) waitSites() {
	g.t.Helper()
	for _, origin := range g.origins {
		waitHTTP(g.t, origin+"/.well-known/oauth-authorization-server")
	}
}

// pid is the running Caddy's process id.
func (g *gateway) pid() int { return g.proc.cmd.Process.Pid }

// kill ends Caddy with SIGKILL, as a crash or the OOM killer would: no
// shutdown, no deferred close of the stores. It returns once the process
// is gone, so its ports and file locks are free.
func (g *gateway) kill() {
	g.t.Helper()
	if err := g.proc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		g.t.Fatal(err)
	}
	_ = g.proc.cmd.Wait() // "signal: killed"
}

// restart starts a new Caddy on the same Caddyfile and data directories
// (after kill) and waits for every site.
func (g *gateway) restart() {
	g.t.Helper()
	g.run()
}

func (g *gateway) write(sites ...string) {
	cfg := fmt.Sprintf("{\n\tadmin %s\n\tstorage file_system %s\n}\n\n%s", g.AdminAddr,
		filepath.Join(g.Dir, "caddy-storage"), strings.Join(sites, "\n"))
	// In caddy fmt's form, as an operator's would be (Caddy warns otherwise).
	if err := os.WriteFile(g.config, caddyfile.Format([]byte(cfg)), 0o600); err != nil {
		g.t.Fatal(err)
	}
}

// reload rewrites the Caddyfile and asks the running Caddy to load it.
// Caddy ignores a config equal to the running one; see forceReload.
func (g *gateway) reload(sites ...string) {
	g.t.Helper()
	g.write(sites...)
	g.caddyReload()
}

// forceReload has the running Caddy load its unchanged Caddyfile again
// (caddy reload --force): a whole config cycle, every module provisioned
// anew and the old ones stopped and cleaned up.
func (g *gateway) forceReload() {
	g.t.Helper()
	g.caddyReload("--force")
}

func (g *gateway) caddyReload(flags ...string) {
	g.t.Helper()
	args := append([]string{"reload", "--config", g.config, "--adapter", "caddyfile", "--address", g.AdminAddr}, flags...)
	out, err := exec.Command(caddyBin, args...).CombinedOutput()
	if err != nil {
		g.t.Fatalf("caddy reload: %v\n%s", err, out)
	}
}

// get fetches a URL and returns status and body.
func get(t testing.TB, url string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}
