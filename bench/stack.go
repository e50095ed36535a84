package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// stack is the processes of one bench run, under one temporary directory.
type stack struct {
	dir                  string
	caddyBin             string
	gateway, plain, noop string // origins
	plainHeaders         string // plain reverse_proxy adding the identity headers
	upstreamAddr         string
	adminAddr            string // Caddy's admin endpoint (pprof)
	caddy                *exec.Cmd
	others               []*exec.Cmd
	// assertion is the origin of a second school forwarding only the
	// signed identity assertion (identity_headers assertion), "" when no
	// protected scenario runs or with -build.
	assertion string
	// pgGateway is the origin of a second school kept in PostgreSQL
	// (store.go), "" when the store scenario does not run.
	pgGateway  string
	pg         *pgcluster.Cluster
	postmaster int // the PostgreSQL server's main process, 0 if unknown
	// older is the Caddy of an older build (-ab), nil without one;
	// thisAlone this tree's beside it, with the same Caddyfile.
	older, thisAlone *olderCaddy
	// The peers (-peers, peers.go): forwardAuth is the origin of Caddy's
	// forward_auth site asking oauth2-proxy at oauth2ProxyAddr, "" when
	// that scenario does not run; skipped says why a peer scenario is
	// skipped, by scenario.
	forwardAuth, oauth2ProxyAddr string
	oauth2Proxy, oidcProvider    *peer
	peers                        []*peer
	skipped                      map[string]string
	// hydraPeer is Ory Hydra's process and hydra the bench's client of
	// it (hydra.go); pgMissing says why PostgreSQL did not start when
	// only Hydra's scenario needed it.
	hydraPeer *peer
	hydra     *hydraClient
	pgMissing string
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// buildCaddy builds Caddy with the modules, as cmd/caddy does for users:
// from the working tree, or, when commit is set, from that commit of the
// repository (checked out in a temporary worktree), so that an older build
// runs through the same harness.
func buildCaddy(dir, commit string) (string, error) {
	bin, src := filepath.Join(dir, "caddy"), "."
	if commit != "" {
		src = filepath.Join(dir, "src-"+fileName(commit))
		if out, err := exec.Command("git", "worktree", "add", "--detach", src, commit).CombinedOutput(); err != nil {
			return "", fmt.Errorf("checking out %s: %v: %s", commit, err, out)
		}
		defer exec.Command("git", "worktree", "remove", "--force", src).Run()
	}
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/caddy")
	cmd.Dir = src
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building Caddy (run from the repository root): %v", err)
	}
	return bin, nil
}

func startStack(cfg config) (*stack, error) {
	dir, err := os.MkdirTemp("", "schoolgate-bench-")
	if err != nil {
		return nil, err
	}
	s := &stack{dir: dir, skipped: map[string]string{}}
	if s.caddyBin, err = buildCaddy(dir, cfg.build); err != nil {
		return s, err
	}
	var addrs [7]string
	for i := range addrs {
		if addrs[i], err = freeAddr(); err != nil {
			return s, err
		}
	}
	s.upstreamAddr = addrs[0]
	noopAddr := addrs[1]
	s.gateway, s.plain, s.noop = "http://"+addrs[2], "http://"+addrs[3], "http://"+addrs[4]
	s.adminAddr = addrs[5]
	s.plainHeaders = "http://" + addrs[6]
	// Not with -build: an older Caddy may not know identity_headers, and
	// the Caddyfile would not load.
	if cfg.build == "" && (cfg.runs("protected") || cfg.runsPeer(scenarioForwardAuth)) {
		a, err := freeAddr()
		if err != nil {
			return s, err
		}
		s.assertion = "http://" + a
	}
	self, err := os.Executable()
	if err != nil {
		return s, err
	}
	for _, a := range [][]string{
		{"-serve", "upstream", "-addr", s.upstreamAddr, "-courses", fmt.Sprint(cfg.courses), "-assertion-issuer", s.assertion},
		{"-serve", "noop-mcp", "-addr", noopAddr},
	} {
		cmd := exec.Command(self, a...)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return s, err
		}
		s.others = append(s.others, cmd)
	}
	if err := waitUp("http://"+s.upstreamAddr+"/", 200); err != nil {
		return s, err
	}
	if cfg.runsPeer(scenarioForwardAuth) {
		if s.oauth2ProxyAddr, err = freeAddr(); err != nil {
			return s, err
		}
		a, err := freeAddr()
		if err != nil {
			return s, err
		}
		s.forwardAuth = "http://" + a
	}
	caddyfile := s.caddyfile(noopAddr)
	if cfg.runs("store") || cfg.runsPeer(scenarioHydra) {
		// Hydra's scenario measures the gateway's postgres school too.
		site, err := s.startPostgres()
		switch {
		case err == nil:
			caddyfile += site
		case cfg.runs("store"):
			return s, err
		default:
			s.pgMissing = err.Error()
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "Caddyfile"), []byte(caddyfile), 0o600); err != nil {
		return s, err
	}
	if err := s.startCaddy(); err != nil {
		return s, err
	}
	if err := s.startPeers(cfg); err != nil {
		return s, err
	}
	if cfg.ab != "" {
		return s, s.startOlder(cfg.ab, cfg.abGlobal, cfg.profile != "")
	}
	return s, nil
}

// caddyfile: the gateway (and the school with identity_headers assertion
// when it runs), and plain reverse_proxy sites with the transport the
// gateway's directive uses for its upstream.
func (s *stack) caddyfile(noopAddr string) string {
	transport := `transport http {
			dial_timeout 5s
			response_header_timeout 60s
			keepalive_idle_conns_per_host 128
		}`
	return fmt.Sprintf(`{
	admin %[7]s
	persist_config off
	storage file_system %[1]s/caddy-storage
}

%[9]s
%[3]s {
	reverse_proxy %[2]s {
		%[5]s
	}
}

%[4]s {
	reverse_proxy %[6]s {
		%[5]s
	}
}

%[8]s {
	reverse_proxy %[2]s {
		%[5]s
		header_up X-School-Subject member-1
		header_up X-School-Email student@bench.example
		header_up X-School-Name "Bench Student"
		header_up X-School-Org-Id org-bench
		header_up X-School-Roles student
		header_up X-School-Scopes "openid profile email account:read"
		header_up X-School-Client-Id bench-agent
		header_up X-School-Audience member
	}
}
%[10]s%[11]s`, s.dir, s.upstreamAddr, s.plain, s.noop, transport, noopAddr, s.adminAddr, s.plainHeaders,
		s.gatewaySite(s.gateway, s.dir+"/data"), s.peerSites(transport), s.assertionSite())
}

// peerSites is the forward_auth site when that peer runs, else nothing.
func (s *stack) peerSites(transport string) string {
	if s.forwardAuth == "" {
		return ""
	}
	return s.forwardAuthSite(transport)
}

// gatewaySite is the site block of the bench's school at origin, its
// data in dir.
func (s *stack) gatewaySite(origin, dir string) string {
	return s.schoolSite(origin, dir, fmt.Sprintf("catalog http://%s/catalog.json refresh 1h", s.upstreamAddr))
}

// assertionSite is the second school when it runs: the protected request
// with the signed assertion as its one identity header. It has no
// catalog (the protected request needs none), so that it adds little to
// what the other scenarios measure of Caddy.
func (s *stack) assertionSite() string {
	if s.assertion == "" {
		return ""
	}
	return s.schoolSite(s.assertion, s.dir+"/data-assertion", "identity_assertion on\n\t\tidentity_headers assertion")
}

// schoolSite is a site block of a school of the bench's vendor client at
// origin, its data in dir, with options (lines of school_gateway).
func (s *stack) schoolSite(origin, dir, options string) string {
	return fmt.Sprintf(`%[1]s {
	school_gateway http://%[2]s {
		issuer %[1]s
		data %[3]s
		%[7]s
		code_ttl 10m
		# One load generator on one address stands for many clients.
		rate_limit off
		vendor "Bench Agent" {
			client_id %[4]s
			redirect_uri %[5]s
			audience member
			scopes %[6]s
		}
	}
}
`, origin, s.upstreamAddr, dir, benchClientID, benchRedirect, benchScope, options)
}

func (s *stack) startCaddy() error {
	cmd := exec.Command(s.caddyBin, "run", "--config", filepath.Join(s.dir, "Caddyfile"), "--adapter", "caddyfile")
	logf, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("caddy-%d.log", time.Now().UnixNano())))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(s.dir, "xdg-config"),
		"XDG_DATA_HOME="+filepath.Join(s.dir, "xdg-data"))
	if err := cmd.Start(); err != nil {
		return err
	}
	s.caddy = cmd
	if err := waitUp(s.gateway+"/.well-known/oauth-authorization-server", 200); err != nil {
		return fmt.Errorf("%w; Caddy's log ends: %s", err, logTail(logf.Name(), 2048))
	}
	return nil
}

// logTail is the last n bytes of a log, for an error that would
// otherwise lose it with the bench's directory.
func logTail(name string, n int64) string {
	b, err := os.ReadFile(name)
	if err != nil {
		return err.Error()
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}

// restartCaddy stops Caddy gracefully and starts it on the same data;
// it returns how long the new process took to answer.
func (s *stack) restartCaddy() (time.Duration, error) {
	_ = s.caddy.Process.Signal(syscall.SIGTERM)
	_ = s.caddy.Wait()
	t0 := time.Now()
	err := s.startCaddy()
	return time.Since(t0), err
}

func (s *stack) stop() {
	for _, p := range s.peers {
		p.stop()
	}
	if s.thisAlone != nil {
		s.thisAlone.stop()
	}
	if s.older != nil {
		s.older.stop()
	}
	if s.caddy != nil {
		_ = s.caddy.Process.Signal(syscall.SIGTERM)
		_ = s.caddy.Wait()
	}
	for _, c := range s.others {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	if s.pg != nil {
		_ = s.pg.Stop()
	}
	_ = os.RemoveAll(s.dir)
}

func (s *stack) caddyPID() int { return s.caddy.Process.Pid }

// waitUp polls a URL until it answers the status.
func waitUp(url string, status int) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == status {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer %d within a minute", url, status)
}

func machine() string {
	return fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}

// cpuProfile saves a CPU profile of Caddy taken over d, the heap
// allocation profiles before and after it (diff them with pprof
// -diff_base) and an execution trace of its first second (go tool
// trace: garbage collection cycles, assists, scheduling), from Caddy's
// admin endpoint (net/http/pprof).
func (s *stack) cpuProfile(d time.Duration, file string) { cpuProfileOf(s.adminAddr, d, file) }

// cpuProfileOf is cpuProfile of the Caddy whose admin endpoint is admin.
func cpuProfileOf(admin string, d time.Duration, file string) {
	base := strings.TrimSuffix(file, ".pprof")
	saveProfileOf(admin, "allocs", base+"-allocs-before.pprof")
	var trace sync.WaitGroup
	trace.Go(func() { saveProfileOf(admin, "trace?seconds=1", base+"-trace.out") })
	saveProfileOf(admin, fmt.Sprintf("profile?seconds=%d", max(1, int(d/time.Second))), file)
	saveProfileOf(admin, "allocs", base+"-allocs-after.pprof")
	trace.Wait() // one trace at a time, as with CPU profiles
}

func (s *stack) saveProfile(which, file string) { saveProfileOf(s.adminAddr, which, file) }

func saveProfileOf(admin, which, file string) {
	resp, err := http.Get("http://" + admin + "/debug/pprof/" + which)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
		return
	}
	defer f.Close()
	_, _ = io.Copy(f, resp.Body)
}
