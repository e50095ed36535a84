package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schoolgate/schoolgate/catalog/catalogtest"
	"github.com/schoolgate/schoolgate/internal/procstat"
)

// schoolsRun measures what many schools in one Caddy cost: for each size,
// a generated Caddyfile of that many school sites on one port (each its
// own issuer, data directory and 40-course catalog), the time until every
// site answers discovery, resident memory, a forced reload, and memory
// once every school has answered one MCP search.
type schoolsRun struct {
	dir, caddyBin, upstream, catalog, admin string
	port                                    int
	// client and noRedirect dial Caddy's port whatever the school's host
	// name, so that sN.localhost needs no resolver.
	client, noRedirect *http.Client
	// results are the reloads-under-load rows, printed after the table;
	// places the schools' throughput by their place among the blocks.
	results, places []string
}

func runSchools(sizes []int) error {
	dir, err := os.MkdirTemp("", "schoolgate-schools-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r := &schoolsRun{dir: dir}
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, "127.0.0.1:"+strconv.Itoa(r.port))
	}
	transport := &http.Transport{MaxIdleConnsPerHost: 64, DialContext: dial}
	r.client = &http.Client{Timeout: 30 * time.Second, Transport: transport}
	r.noRedirect = &http.Client{Timeout: 30 * time.Second, Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if r.caddyBin, err = buildCaddy(dir, ""); err != nil {
		return err
	}
	feed, err := catalogtest.Feed(40)
	if err != nil {
		return err
	}
	r.catalog = filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(r.catalog, feed, 0o600); err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	up := exec.Command(self, "-serve", "upstream", "-addr", addr, "-courses", "40")
	up.Stderr = os.Stderr
	if err := up.Start(); err != nil {
		return err
	}
	defer func() { _ = up.Process.Kill(); _ = up.Wait() }()
	r.upstream = "http://" + addr
	if err := waitUp(r.upstream+"/", 200); err != nil {
		return err
	}
	fmt.Printf("machine: %s\n\n", machine())
	fmt.Println("| schools | first start to serving | restart to serving | RSS at first start | RSS at restart | reload changing one school | RSS after one search per school | RSS after one search and one protected request per school | the same, clients' connections closed | the same, settled | open files |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, n := range sizes {
		if err := r.measure(n); err != nil {
			return fmt.Errorf("%d schools: %v", n, err)
		}
	}
	fmt.Println()
	fmt.Println("| schools | reloads under load | requests | 5xx | other than 200 | connections closed under a request | goroutines before → after | open files before → after |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, line := range r.results {
		fmt.Println(line)
	}
	fmt.Println()
	fmt.Println("| schools | school | discovery req/s (16 clients, median of the rounds) | ÷ the fastest school's |")
	fmt.Println("| ---: | --- | ---: | ---: |")
	for _, line := range r.places {
		fmt.Println(line)
	}
	return nil
}

func (r *schoolsRun) host(i int) string { return fmt.Sprintf("s%d.localhost:%d", i, r.port) }

// caddyfile writes the configuration of n schools; variant changes one
// option of school 0 alone, for a reload that changes one school.
func (r *schoolsRun) caddyfile(n int, admin string, variant int) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "{\n\tadmin %s\n\tpersist_config off\n\tstorage file_system %s/caddy-storage\n}\n", admin, r.dir)
	for i := range n {
		refresh := "10m"
		if i == 0 {
			refresh = fmt.Sprintf("%dm", 10+variant)
		}
		fmt.Fprintf(&b, `
http://%[1]s {
	school_gateway %[2]s {
		issuer http://%[1]s
		data %[3]s/data/s%[4]d
		catalog %[5]s refresh %[6]s
		rate_limit off
		vendor "Bench Agent" {
			client_id %[7]s
			redirect_uri %[8]s
			audience member
			scopes %[9]s
		}
	}
}
`, r.host(i), r.upstream, r.dir, i, r.catalog, refresh, benchClientID, benchRedirect, benchScope)
	}
	path := filepath.Join(r.dir, fmt.Sprintf("Caddyfile-%d-%d", n, variant))
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

func (r *schoolsRun) measure(n int) error {
	var err error
	if r.port, err = freePort(); err != nil {
		return err
	}
	if r.admin, err = freeAddr(); err != nil {
		return err
	}
	config, err := r.caddyfile(n, r.admin, 0)
	if err != nil {
		return err
	}
	caddy := exec.Command(r.caddyBin, "run", "--config", config, "--adapter", "caddyfile")
	caddy.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(r.dir, "xdg-data"), "XDG_CONFIG_HOME="+filepath.Join(r.dir, "xdg-config"))
	logf, err := os.Create(filepath.Join(r.dir, fmt.Sprintf("caddy-%d.log", n)))
	if err != nil {
		return err
	}
	defer logf.Close()
	caddy.Stdout, caddy.Stderr = logf, logf
	began := time.Now()
	if err := caddy.Start(); err != nil {
		return err
	}
	defer func() { _ = caddy.Process.Signal(syscall.SIGTERM); _ = caddy.Wait() }()
	// caddy is the running process, replaced by the restart below.
	if err := r.allServe(n, "/.well-known/oauth-authorization-server", ""); err != nil {
		return err
	}
	startup := time.Since(began)
	atStart, _ := procstat.ReadMemory(caddy.Process.Pid)
	changed, err := r.caddyfile(n, r.admin, 1)
	if err != nil {
		return err
	}
	began = time.Now()
	if err := r.reload(changed, false); err != nil {
		return err
	}
	reload := time.Since(began)
	if err := r.allServe(n, "/mcp", searchCall); err != nil {
		return err
	}
	afterSearch, _ := procstat.ReadMemory(caddy.Process.Pid)
	toks, err := r.tokens(n)
	if err != nil {
		return err
	}
	if err := r.eachSchool(n, func(ctx context.Context, i int) error { return r.protected(ctx, i, toks[i]) }); err != nil {
		return err
	}
	touched, _ := procstat.ReadMemory(caddy.Process.Pid)
	files := openFiles(caddy.Process.Pid)
	// The load generator keeps one idle connection per school host, and
	// Caddy tries site blocks in order: a request to the thousandth school
	// passes a thousand host matchers, and the connection's goroutine keeps
	// the stack that took (about 200 KB). Closed, that memory is the
	// clients', not the schools'.
	r.client.CloseIdleConnections()
	r.noRedirect.CloseIdleConnections()
	time.Sleep(5 * time.Second)
	closed, _ := procstat.ReadMemory(caddy.Process.Pid)
	// Settled: what an idle Caddy comes down to. Each collection halves
	// the stacks goroutines no longer use (the runtime does one at least
	// every two minutes; the admin API's heap profile asks for one now),
	// and the freed memory is returned to the system over the next
	// seconds.
	for range 6 {
		r.adminGet("/debug/pprof/heap?gc=1")
	}
	time.Sleep(10 * time.Second)
	settled, _ := procstat.ReadMemory(caddy.Process.Pid)
	r.results = append(r.results, r.reloadsUnderLoad(n, caddy.Process.Pid, toks, config, changed))

	// A restart finds every store, key and catalog on disk: what an
	// operator's deploy or reboot costs, as opposed to the first start.
	_ = caddy.Process.Signal(syscall.SIGTERM)
	_ = caddy.Wait()
	caddy = exec.Command(r.caddyBin, "run", "--config", config, "--adapter", "caddyfile")
	caddy.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(r.dir, "xdg-data"), "XDG_CONFIG_HOME="+filepath.Join(r.dir, "xdg-config"))
	caddy.Stdout, caddy.Stderr = logf, logf
	began = time.Now()
	if err := caddy.Start(); err != nil {
		return err
	}
	if err := r.allServe(n, "/.well-known/oauth-authorization-server", ""); err != nil {
		return err
	}
	restart := time.Since(began)
	atRestart, _ := procstat.ReadMemory(caddy.Process.Pid)
	if err := r.byPlace(n, caddy.Process.Pid); err != nil {
		return err
	}
	fmt.Printf("| %d | %.2f s | %.2f s | %s | %s | %.2f s | %s | %s | %s | %s | %d |\n", n, startup.Seconds(), restart.Seconds(),
		mb(atStart), mb(atRestart), reload.Seconds(), mb(afterSearch), mb(touched), mb(closed), mb(settled), files)
	return nil
}

// mb shows resident memory as its total and, in brackets, the process's
// own (anonymous) memory and the mapped files (the binary, the stores).
func mb(m procstat.Memory) string {
	return fmt.Sprintf("%d MB (%d + %d)", m.RSS>>20, m.Anon>>20, m.File>>20)
}

// reload loads config into the running Caddy; forced, even if unchanged.
func (r *schoolsRun) reload(config string, force bool) error {
	args := []string{"reload", "--config", config, "--adapter", "caddyfile", "--address", r.admin}
	if force {
		args = append(args, "--force")
	}
	out, err := exec.Command(r.caddyBin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("reload: %v\n%s", err, out)
	}
	return nil
}

// reloadsUnderLoad reloads ten times in a row, alternating the option of
// school 0, while 16 clients send protected requests and searches to all
// schools; it counts the answers that were not 200 and compares goroutines
// and open files before and after, once the old configs have let go.
func (r *schoolsRun) reloadsUnderLoad(n, pid int, toks []string, configs ...string) string {
	settle := func() (int, int) {
		time.Sleep(3 * time.Second)
		return r.goroutines(), openFiles(pid)
	}
	r.client.CloseIdleConnections()
	g0, f0 := settle()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var requests, fivexx, other, dropped int
	firstBad := ""
	for w := range 16 {
		wg.Go(func() {
			for k := w; ctx.Err() == nil; k += 16 {
				i := k % n
				var err error
				if k%2 == 0 {
					err = r.protected(ctx, i, toks[i])
				} else {
					err = r.call(ctx, i, "/mcp", searchCall)
				}
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				requests++
				var se statusError
				switch {
				case err == nil:
				case errors.As(err, &se) && se.status >= 500:
					fivexx++
				case errors.As(err, &se):
					other++
				default:
					// The old config closed a kept-alive connection as the
					// request went out on it: HTTP/1.1's race, which
					// clients retry; counted apart from answers.
					dropped++
				}
				if err != nil && firstBad == "" {
					firstBad = err.Error()
				}
				mu.Unlock()
			}
		})
	}
	var reloadErr error
	for k := range 10 {
		if reloadErr = r.reload(configs[k%2], false); reloadErr != nil {
			break
		}
	}
	cancel()
	wg.Wait()
	// The load's own kept-alive connections are not the gateway's.
	r.client.CloseIdleConnections()
	g1, f1 := settle()
	line := fmt.Sprintf("| %d | 10 | %d | %d | %d | %d | %d → %d | %d → %d |", n, requests, fivexx, other, dropped, g0, g1, f0, f1)
	if reloadErr != nil {
		line += " reload failed: " + reloadErr.Error()
	}
	if firstBad != "" {
		line += " first refused: " + firstBad
	}
	return line
}

// runSchoolSizes parses -schools.
func runSchoolSizes(list string) error {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-schools: %q is not a number of schools", f)
		}
		sizes = append(sizes, n)
	}
	return runSchools(sizes)
}

// byPlace measures discovery of schools at different places among the
// site blocks (the last written, a tenth of the way, the eleventh, the
// second: Caddy orders the blocks itself, so the places are where they
// end up, not where they were written), each round running them in a
// rotated order so that no school always follows the same one.
func (r *schoolsRun) byPlace(n, pid int) error {
	if n < 20 {
		return nil
	}
	schools := []int{n - 1, n / 10, 10, 1}
	rounds, d := 3, 3*time.Second
	rps := make([][]float64, len(schools))
	for round := range rounds {
		for k := range schools {
			j := (k + round) % len(schools)
			url, want := "http://"+r.host(schools[j])+"/.well-known/oauth-authorization-server", fmt.Sprintf("%q", "http://"+r.host(schools[j]))
			st := load(16, d, 0, pid, func(ctx context.Context, _ int) error {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				resp, err := r.client.Do(req)
				return expect(resp, err, http.StatusOK, want)
			})
			if st.failures > 0 || st.requests == 0 {
				return fmt.Errorf("discovery of s%d: %d of %d requests failed, first: %v", schools[j], st.failures, st.requests, st.firstErr)
			}
			rps[j] = append(rps[j], st.rps())
		}
	}
	medians := make([]float64, len(schools))
	best := 0.0
	for j := range schools {
		slices.Sort(rps[j])
		medians[j] = rps[j][len(rps[j])/2]
		best = max(best, medians[j])
	}
	for j, i := range schools {
		r.places = append(r.places, fmt.Sprintf("| %d | s%d | %.0f | %.2f× |", n, i, medians[j], medians[j]/best))
	}
	return nil
}
