package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schoolgate/schoolgate/internal/procstat"
	"github.com/schoolgate/schoolgate/registry"
)

// platformRun measures the school_platform handler over each registry: n
// schools written to the registry before Caddy starts (each its own
// origin, sN.localhost on the bench's port), the start to serving, the
// last-registered school's throughput against the first's, memory and
// open files once every school has answered one request, how long a
// registry change takes to be served without a reload, and two instances
// on one PostgreSQL under load while a writer changes the registry.
type platformRun struct {
	cfg         platformConfig
	dir         string
	caddyBin    string
	upstream    string
	port        int // the port of every school's issuer: instance A's
	vendorsJSON json.RawMessage
	// the tables' rows, printed together at the end
	starts, ratios, memory, cold, changes, churn, bursts []string
}

// platformConfig is the scenario's sizes.
type platformConfig struct {
	schools, maxActive, concurrency, rounds, samples int
	duration, churn, settle                          time.Duration
	// visible is how long after its write a school added under churn is
	// asked for: past it, a 404 is a school lost.
	visible    time.Duration
	registries []string
	// steps are the measures run after the start (-platform-steps); nil:
	// every one.
	steps []string
	// profile is -profile: "burst" writes a CPU profile of the first
	// instance during the burst, to bench-burst-<registry>.pprof.
	profile string
}

const discoveryPath = "/.well-known/oauth-authorization-server"

func runPlatform(cfg platformConfig) error {
	for _, kind := range cfg.registries {
		if kind != "dir" && kind != "postgres" {
			return fmt.Errorf("-registries: unknown registry %q (dir, postgres)", kind)
		}
	}
	dir, err := os.MkdirTemp("", "schoolgate-platform-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p := &platformRun{cfg: cfg, dir: dir}
	progress("-", "building Caddy")
	if p.caddyBin, err = buildCaddy(dir, ""); err != nil {
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
	p.upstream = "http://" + addr
	if err := waitUp(p.upstream+"/", 200); err != nil {
		return err
	}
	p.vendorsJSON, _ = json.Marshal([]map[string]any{{"name": "Bench Agent", "client_id": benchClientID,
		"redirect_uris": []string{benchRedirect}, "audience": "member", "scopes": strings.Fields(benchScope)}})
	var failed error
	for _, kind := range cfg.registries {
		if err := p.measure(kind); err != nil {
			failed = fmt.Errorf("platform, registry %s: %v", kind, err)
			break
		}
	}
	p.print()
	return failed
}

func (p *platformRun) print() {
	fmt.Printf("machine: %s; %d schools, max_active %d\n\n", machine(), p.cfg.schools, p.cfg.maxActive)
	// table prints a table whose first text columns are words, the rest
	// figures.
	table := func(head string, rows []string, text int) {
		fmt.Println(head)
		cols := strings.Count(head, "|") - 1
		fmt.Println("|" + strings.Repeat(" --- |", text) + strings.Repeat(" ---: |", cols-text))
		for _, r := range rows {
			fmt.Println(r)
		}
		fmt.Println()
	}
	table("| registry | schools | records written before the start (dir: files written, one sync; postgres: Put, 16 at once) | start to serving (first school's discovery; the process's CPU then; its threads' wait for a processor) | RSS at serving | RSS 2 s later, idle | targets |", p.starts, 1)
	table(fmt.Sprintf("| registry | request (%d clients, %d rounds of %s, interleaved) | first school req/s | last school req/s | last ÷ first (median of the rounds') | first p50 | last p50 | target |",
		p.cfg.concurrency, p.cfg.rounds, p.cfg.duration), p.ratios, 2)
	table("| registry | one request to each school, 16 clients | active after | RSS right after | settled, first reading | settled, second reading | RSS target | open files | files target |", p.memory, 1)
	table("| registry | idle schools asked once, one at a time | p50 | p99 | max | target (p99) |", p.cold, 1)
	table("| registry | instances | samples | added → served, p50 | max | removed → 404 everywhere, p50 | max | target | the write itself (Put, Remove), p50 |", p.changes, 2)
	table("| registry | instances | schools added at once | the writes (dir: renamed in; postgres: Put, 16 at once) | the last written served (at the last instance) | every one served (each asked once the last is, its first request building it) | Caddy CPU-seconds, burst start → last served (A / B) | → every one served (A / B) | targets |", p.bursts, 1)
	table("| registry | instances | clients | seconds | writes: add / change / remove | requests | 5xx | wrong school | 404 of a school never removed | other failures | 404 of a removed school (expected) |", p.churn, 1)
}

// startLimit is how long a Caddy may take to serve its first school: a
// minute, and a minute more for each 10,000 schools past 10,000 (a
// shared machine's load stretches it).
func (p *platformRun) startLimit() time.Duration {
	return time.Minute * time.Duration(1+max(0, p.cfg.schools-10000)/10000)
}

// step reports whether the measure name runs.
func (p *platformRun) step(name string) bool {
	return p.cfg.steps == nil || slices.Contains(p.cfg.steps, name)
}

func (p *platformRun) host(name string) string { return fmt.Sprintf("%s.localhost:%d", name, p.port) }

func (p *platformRun) issuer(name string) string { return "http://" + p.host(name) }

func schoolName(i int) string { return fmt.Sprintf("s%d", i) }

// record is the registry record of the school name: the bench's legacy
// server, no catalog, the bench's vendor client, rate limits off (one
// load generator on one address stands for many clients); loginURL,
// when set, is the option a writer changes.
func (p *platformRun) record(name string, hosts []string, loginURL string) registry.Record {
	cfg := map[string]any{"upstream": p.upstream, "rate_limits": map[string]bool{"off": true}, "vendors": p.vendorsJSON}
	if loginURL != "" {
		cfg["login_url"] = loginURL
	}
	raw, _ := json.Marshal(cfg)
	return registry.Record{Issuer: p.issuer(name), Hosts: hosts, Config: raw}
}

// settledRSS is c's memory 2 s after it served, no request sent
// meanwhile: what an idle platform holds once its start is over (the
// registry's comparison of the files with its snapshot begins a second
// after the start, and is in it).
func settledRSS(c *platformCaddy) procstat.Memory {
	time.Sleep(2 * time.Second)
	m, _ := procstat.ReadMemory(c.pid())
	return m
}

// measure runs every measure of one registry kind.
func (p *platformRun) measure(kind string) error {
	var err error
	if p.port, err = freePort(); err != nil {
		return err
	}
	base := filepath.Join(p.dir, kind)
	if err := os.MkdirAll(base, 0o700); err != nil {
		return err
	}
	progress(kind, "writing %d records", p.cfg.schools)
	reg, err := p.openRegistry(kind, base)
	if err != nil {
		return fmt.Errorf("writing the records: %v", err)
	}
	defer reg.stop()
	registryLine, n := reg.line, p.cfg.schools

	a, err := p.startCaddy(base, "a", p.port, registryLine)
	if err != nil {
		return err
	}
	instances := []*platformCaddy{a}
	defer func() {
		for _, c := range instances {
			c.stop()
		}
	}()
	if err := a.waitIssuer(p, schoolName(0), a.began); err != nil {
		return err
	}
	startup := time.Since(a.began)
	atStart, _ := procstat.ReadMemory(a.pid())
	// The CPU the process spent to serve: on a machine shared with
	// other work, the steadier figure of the two.
	startCPU, _ := procstat.CPU(a.pid())
	startWait, _ := procstat.RunWait(a.pid())
	later := settledRSS(a)
	// The RSS target is 100 MB up to 10,000 schools, 150 MB past.
	rssTarget := int64(100)
	if n > 10000 {
		rssTarget = 150
	}
	p.starts = append(p.starts, fmt.Sprintf("| %s | %d | %.1f s | %.2f s (%.2f CPU-s; %.2f s) | %s | %s | ≤ 1 s, ≤ %d MB: %s, %s |", kind, n,
		reg.written.Seconds(), startup.Seconds(), startCPU.Seconds(), startWait.Seconds(), mb(atStart), mb(later), rssTarget, met(startup <= time.Second), met(atStart.RSS <= rssTarget<<20)))
	if kind == "dir" {
		// The first start read the files and wrote the registry's
		// snapshot (once read, and at its stop); a restart serves from
		// the snapshot and compares the files in the background.
		progress(kind, "restarting: from the registry's snapshot")
		a.stop()
		instances = nil
		if _, err := os.Stat(filepath.Join(base, "registry", ".schoolgate-registry.snapshot")); err != nil {
			return fmt.Errorf("no snapshot after the first start's stop: %v", err)
		}
		if a, err = p.startCaddy(base, "a", p.port, registryLine); err != nil {
			return err
		}
		instances = []*platformCaddy{a}
		if err := a.waitIssuer(p, schoolName(0), a.began); err != nil {
			return err
		}
		startup = time.Since(a.began)
		atStart, _ = procstat.ReadMemory(a.pid())
		startCPU, _ = procstat.CPU(a.pid())
		startWait, _ = procstat.RunWait(a.pid())
		later = settledRSS(a)
		p.starts = append(p.starts, fmt.Sprintf("| %s, restarted (its snapshot) | %d | — | %.2f s (%.2f CPU-s; %.2f s) | %s | %s | ≤ 1 s, ≤ %d MB: %s, %s |", kind, n,
			startup.Seconds(), startCPU.Seconds(), startWait.Seconds(), mb(atStart), mb(later), rssTarget, met(startup <= time.Second), met(atStart.RSS <= rssTarget<<20)))
	}

	if p.step("ratio") {
		progress(kind, "serving; first school against the last")
		if err := p.firstAndLast(kind, a); err != nil {
			return err
		}
	}
	if p.step("every") {
		progress(kind, "one request to each school")
		if err := p.everySchool(kind, a); err != nil {
			return err
		}
	}
	if p.step("cold") {
		progress(kind, "cold first requests")
		if err := p.coldSchools(kind, a); err != nil {
			return err
		}
	}
	if kind == "postgres" {
		port, err := freePort()
		if err != nil {
			return err
		}
		b, err := p.startCaddy(base, "b", port, registryLine)
		if err != nil {
			return err
		}
		instances = append(instances, b)
		if err := b.waitIssuer(p, schoolName(0), b.began); err != nil {
			return err
		}
	}
	if p.step("changes") {
		progress(kind, "changes without a reload")
		if err := p.changesApplied(kind, reg, instances); err != nil {
			return err
		}
	}
	if p.step("churn") {
		progress(kind, "under churn")
		if err = p.underChurn(kind, reg, instances); err != nil {
			return err
		}
	}
	if p.step("burst") {
		progress(kind, "a burst of %d schools", burstSize)
		err = p.burst(kind, reg.Registry, instances)
	}
	progress(kind, "stopping")
	return err
}

// firstAndLast compares the first-registered school with the last, for
// discovery and for a protected request, interleaved round by round.
func (p *platformRun) firstAndLast(kind string, c *platformCaddy) error {
	first, last := schoolName(0), schoolName(p.cfg.schools-1)
	ctx := context.Background()
	tokFirst, err := c.token(ctx, p, first)
	if err != nil {
		return c.failure(err)
	}
	tokLast, err := c.token(ctx, p, last)
	if err != nil {
		return c.failure(err)
	}
	discovery := func(name string) request {
		url, want := "http://"+p.host(name)+discoveryPath, fmt.Sprintf("%q", p.issuer(name))
		return func(ctx context.Context, _ int) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := c.client.Do(req)
			return expect(resp, err, http.StatusOK, want)
		}
	}
	protected := func(name, token string) request {
		return func(ctx context.Context, _ int) error {
			status, err := c.protected(ctx, p.host(name), token)
			if err == nil && status != http.StatusOK {
				err = fmt.Errorf("%s /account/graphql: HTTP %d", name, status)
			}
			return err
		}
	}
	pairs := []struct {
		name        string
		first, last request
	}{
		{"discovery", discovery(first), discovery(last)},
		{"protected /account/graphql (member token)", protected(first, tokFirst), protected(last, tokLast)},
	}
	for _, pair := range pairs {
		// One request each first: the school's token validated once, its
		// connections opened.
		for _, req := range []request{pair.first, pair.last} {
			if err := req(ctx, 0); err != nil {
				return c.failure(fmt.Errorf("%s: %v", pair.name, err))
			}
		}
		// The order within a round alternates (first, last; last, first;
		// ...), so that whatever the second run of a round inherits from
		// the first (garbage to collect, a warmer cache) falls on each
		// school alike; the ratio is the median of the rounds' own
		// ratios, so that the machine's drift between rounds cancels.
		var runs [2][]stats
		ratios := make([]float64, 0, p.cfg.rounds)
		for round := range p.cfg.rounds {
			order := []int{0, 1}
			if round%2 == 1 {
				order = []int{1, 0}
			}
			for _, i := range order {
				req := []request{pair.first, pair.last}[i]
				s := load(p.cfg.concurrency, p.cfg.duration, 0, c.pid(), req)
				if s.failures > 0 {
					return c.failure(fmt.Errorf("%s: %d of %d requests failed, first: %v", pair.name, s.failures, s.requests, s.firstErr))
				}
				if s.requests == 0 {
					return c.failure(fmt.Errorf("%s: no request answered within %s", pair.name, p.cfg.duration))
				}
				runs[i] = append(runs[i], s)
			}
			ratios = append(ratios, runs[1][round].rps()/runs[0][round].rps())
		}
		slices.Sort(ratios)
		ratio := ratios[len(ratios)/2]
		rf, rl := median(runs[0], stats.rps), median(runs[1], stats.rps)
		p50 := func(s stats) float64 { return float64(s.percentile(0.5)) }
		p.ratios = append(p.ratios, fmt.Sprintf("| %s | %s | %.0f | %.0f | %.2f× (rounds %.2f–%.2f) | %s | %s | ≥ 0.97: %s |", kind, pair.name,
			rf, rl, ratio, ratios[0], ratios[len(ratios)-1], ms(median(runs[0], p50)), ms(median(runs[1], p50)), met(ratio >= 0.97)))
	}
	return nil
}

// everySchool sends one discovery request to each school (16 clients),
// so that every school is built once and all but max_active are let go
// of again; then it reads resident memory right after and settled (the
// clients' idle connections closed, six collections asked for through
// the admin API's heap profile, then two readings cfg.settle apart: the
// runtime returns freed memory to the system over the following
// seconds), and the process's open files.
func (p *platformRun) everySchool(kind string, c *platformCaddy) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	began := time.Now()
	err := forEach(ctx, p.cfg.schools, 16, func(ctx context.Context, i int) error {
		name := schoolName(i)
		status, issuer, err := c.discovery(ctx, p.host(name))
		if err == nil && (status != http.StatusOK || issuer != p.issuer(name)) {
			err = fmt.Errorf("%s: HTTP %d issuer %q", p.host(name), status, issuer)
		}
		return err
	})
	if err != nil {
		return c.failure(err)
	}
	took := time.Since(began)
	right, _ := procstat.ReadMemory(c.pid())
	c.client.CloseIdleConnections()
	for range 6 {
		c.adminGet("/debug/pprof/heap?gc=1")
	}
	time.Sleep(p.cfg.settle)
	settled1, _ := procstat.ReadMemory(c.pid())
	time.Sleep(p.cfg.settle)
	settled2, _ := procstat.ReadMemory(c.pid())
	files := openFiles(c.pid())
	active := c.active()
	target := 150<<20 + int64(active)*(1<<20)/4
	p.memory = append(p.memory, fmt.Sprintf("| %s | %d in %.1f s | %d | %s | %s | %s | ≤ %d MB: %s | %d | ≤ %d: %s |", kind,
		p.cfg.schools, took.Seconds(), active, mb(right), mb(settled1), mb(settled2), target>>20, met(settled2.RSS <= target),
		files, p.cfg.maxActive+100, met(files <= p.cfg.maxActive+100)))
	return nil
}

// coldSchools measures a cold school's first request: after every school
// has answered once, all but the max_active most recent are idle, their
// store and keys on disk or in the database; the first of them are asked
// for their discovery once each, one at a time, so that each request's
// time is its school's build and not a queue.
func (p *platformRun) coldSchools(kind string, c *platformCaddy) error {
	n := min(p.cfg.schools-p.cfg.maxActive, 1000)
	if n <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	took := make([]time.Duration, 0, n)
	for i := range n {
		name := schoolName(i)
		began := time.Now()
		status, issuer, err := c.discovery(ctx, p.host(name))
		if err == nil && (status != http.StatusOK || issuer != p.issuer(name)) {
			err = fmt.Errorf("%s: HTTP %d issuer %q", p.host(name), status, issuer)
		}
		if err != nil {
			return c.failure(err)
		}
		took = append(took, time.Since(began))
	}
	slices.Sort(took)
	p99 := took[len(took)*99/100]
	limit := 50 * time.Millisecond
	if kind == "postgres" {
		limit = 100 * time.Millisecond
	}
	p.cold = append(p.cold, fmt.Sprintf("| %s | %d | %s | %s | %s | ≤ %s: %s |", kind, n, ms(float64(took[len(took)/2])),
		ms(float64(p99)), ms(float64(took[len(took)-1])), limit, met(p99 <= limit)))
	return nil
}

// forEach runs fn for i in [0, n), c at a time, and returns the first
// error (the others are cancelled).
func forEach(ctx context.Context, n, c int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, c)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		})
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
		first = ctx.Err()
	}
	return first
}

// progress tells the operator of a long run where it is, on stderr.
func progress(kind, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s platform %s: %s\n", time.Now().Format("15:04:05"), kind, fmt.Sprintf(format, args...))
}

// met says whether a target is met.
func met(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

// percentiles are the p50 and max of durations.
func percentiles(d []time.Duration) (time.Duration, time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}
