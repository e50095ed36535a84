package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schoolgate/schoolgate/internal/procstat"
)

// schoolsRun measures what many schools in one Caddy cost: for each size,
// a generated Caddyfile of that many school sites on one port (each its
// own issuer, data directory and 40-course catalog), the time until every
// site answers discovery, resident memory, a forced reload, and memory
// once every school has answered one MCP search.
type schoolsRun struct {
	dir, caddyBin, upstream, catalog string
	port                             int
	client                           *http.Client
}

func runSchools(sizes []int) error {
	dir, err := os.MkdirTemp("", "schoolgate-schools-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r := &schoolsRun{dir: dir, client: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	if r.caddyBin, err = buildCaddy(dir); err != nil {
		return err
	}
	feed, err := catalogFeed(40)
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
	fmt.Println("| schools | start to serving | RSS at start | forced reload | RSS after one search per school | open files |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, n := range sizes {
		if err := r.measure(n); err != nil {
			return fmt.Errorf("%d schools: %v", n, err)
		}
	}
	return nil
}

func (r *schoolsRun) host(i int) string { return fmt.Sprintf("s%d.localhost:%d", i, r.port) }

// caddyfile writes the configuration of n schools.
func (r *schoolsRun) caddyfile(n int, admin string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "{\n\tadmin %s\n\tpersist_config off\n\tstorage file_system %s/caddy-storage\n}\n", admin, r.dir)
	for i := range n {
		fmt.Fprintf(&b, "\nhttp://%[1]s {\n\tschool_gateway %[2]s {\n\t\tissuer http://%[1]s\n\t\tdata %[3]s/data/s%[4]d\n\t\tcatalog %[5]s\n\t}\n}\n",
			r.host(i), r.upstream, r.dir, i, r.catalog)
	}
	path := filepath.Join(r.dir, fmt.Sprintf("Caddyfile-%d", n))
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

func (r *schoolsRun) measure(n int) error {
	var err error
	if r.port, err = freePort(); err != nil {
		return err
	}
	admin, err := freeAddr()
	if err != nil {
		return err
	}
	config, err := r.caddyfile(n, admin)
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
	if err := r.allServe(n, "/.well-known/oauth-authorization-server", ""); err != nil {
		return err
	}
	startup := time.Since(began)
	atStart, _ := procstat.ReadMemory(caddy.Process.Pid)
	began = time.Now()
	out, err := exec.Command(r.caddyBin, "reload", "--force", "--config", config, "--adapter", "caddyfile",
		"--address", admin).CombinedOutput()
	if err != nil {
		return fmt.Errorf("reload: %v\n%s", err, out)
	}
	reload := time.Since(began)
	if err := r.allServe(n, "/mcp", searchCall); err != nil {
		return err
	}
	touched, _ := procstat.ReadMemory(caddy.Process.Pid)
	fmt.Printf("| %d | %.2f s | %d MB | %.2f s | %d MB | %d |\n", n, startup.Seconds(), atStart.RSS>>20,
		reload.Seconds(), touched.RSS>>20, openFiles(caddy.Process.Pid))
	return nil
}

// allServe waits until every school answers path (a GET, or a POST of
// body to /mcp) with 200, 16 schools at a time.
func (r *schoolsRun) allServe(n int, path, body string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := r.serving(ctx, i, path, body); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return firstErr
}

func (r *schoolsRun) serving(ctx context.Context, i int, path, body string) error {
	for {
		method := http.MethodGet
		if body != "" {
			method = http.MethodPost
		}
		req, _ := http.NewRequestWithContext(ctx, method, "http://127.0.0.1:"+strconv.Itoa(r.port)+path, strings.NewReader(body))
		req.Host = r.host(i)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
			for k, v := range mcpHeaders {
				req.Header.Set(k, v)
			}
		}
		resp, err := r.client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("school %d never answered %s: %v", i, path, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	a, err := freeAddr()
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(a[strings.LastIndex(a, ":")+1:])
}

func openFiles(pid int) int {
	entries, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	return len(entries)
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
