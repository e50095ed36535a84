package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/procstat"
)

// The soak test: a bounded, paced mixed load on loopback against a real
// Caddy. It runs for SOAK_DURATION (default 20s, which keeps CI quick);
// the full mode the issue asks for is at least a minute:
//
//	SOAK_DURATION=60s go test ./e2e -run Soak -v
const (
	soakDefaultDuration = 20 * time.Second
	soakWarmUp          = 3 * time.Second
	soakRate            = 200 // requests per second, every kind together
	soakWorkers         = 16
	soakFlows           = 16
	soakGoroutineSlack  = 50
	soakRSSFactor       = 1.5
	soakRSSSlack        = 30 << 20
)

func soakDuration(t *testing.T) time.Duration {
	s := os.Getenv("SOAK_DURATION")
	if s == "" {
		return soakDefaultDuration
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 4*time.Second {
		t.Fatalf("SOAK_DURATION=%q: want a duration of at least 4s", s)
	}
	return d
}

const (
	mcpSearch = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_catalog",` +
		`"arguments":{"query":"photography","limit":5}}}`
)

// autosaved is what Caddy logs after each config it loads.
const autosaved = "autosaved config"

var mcpHeaders = map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}

// soakStats collects latencies per request kind and every failure.
type soakStats struct {
	mu        sync.Mutex
	latency   map[string][]time.Duration
	total     int
	server    int // 5xx
	transport int // transport errors
	wrong     int // any other unexpected answer
	failures  []string
	// reloadResets are the requests the reload's hand-over of connections
	// cut off before any answer (see soak.one); each was retried.
	reloadResets []string
}

func (s *soakStats) record(kind string, took time.Duration, r reply, problem string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total++
	switch {
	case r.err != nil:
		s.transport++
	case r.status >= 500:
		s.server++
	case problem != "":
		s.wrong++
	default:
		s.latency[kind] = append(s.latency[kind], took)
		return
	}
	if len(s.failures) < 20 {
		if problem == "" {
			problem = "unexpected answer"
		}
		s.failures = append(s.failures, fmt.Sprintf("%s at %s: %s: %v", kind, time.Now().Format("15:04:05.000"), problem, r))
	}
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(math.Ceil(p*float64(len(sorted))))-1]
}

// soakFlow is one client's OAuth life cycle, advanced one request at a
// time: authorize, exchange, refresh, revoke, and a check that the
// revoked grant's access token is refused. A step cut off without an
// answer stays where it is, so that a retry repeats it.
type soakFlow struct {
	step           int
	code, verifier string
	pair           tokenPair
}

// soak is the load generator.
type soak struct {
	o      *oauthLoad
	member string // a member access token used throughout
	stats  *soakStats
	flows  chan *soakFlow
	next   atomic.Int64
	missed atomic.Int64
	// reloading is set from just before a config reload until a second
	// after it returned.
	reloading atomic.Bool
}

// schedule is the mix, one entry per paced request: 20% discovery, 20%
// protected GraphQL, 20% MCP search, 40% OAuth flow steps (authorize,
// exchange, refresh, revoke, revoked check; 8% each).
var schedule = []string{"discovery", "graphql", "flow", "mcp", "flow", "discovery", "graphql", "flow", "mcp", "flow"}

var discoveryPaths = []string{"/.well-known/openid-configuration", "/.well-known/oauth-authorization-server",
	"/.well-known/jwks.json", "/.well-known/oauth-protected-resource"}

// one sends the next request of the mix.
//
// A config reload stops Caddy's old HTTP server (http.Server.Shutdown):
// it closes the keep-alive connections that are idle at that instant and
// hands the listening socket over, so a request written on such a
// connection at that very moment, or queued on the old socket, is cut off
// with EOF or a reset before the server read it. That is Caddy's reload
// (a site with nothing but `respond` shows it too), not the gateway;
// HTTP/1.1 clients retry such requests. So a request cut off that way
// while the reload runs is noted and retried (a retry may pick another
// pooled connection the old server is closing, hence up to three times),
// and the retry must succeed — which for a code exchange also proves the
// lost attempt did not redeem the code. Any other transport error, any
// 5xx and any wrong answer, at any time, fails the test.
func (s *soak) one(ctx context.Context) {
	i := s.next.Add(1) - 1
	kind := schedule[i%int64(len(schedule))]
	var f *soakFlow
	if kind == "flow" {
		f = <-s.flows // waiting for a free flow is not the server's time
		defer func() { s.flows <- f }()
	}
	began := time.Now()
	kind, r, problem := s.attempt(ctx, i, kind, f)
	for retry := 0; retry < 3 && r.err != nil && s.reloading.Load() && reloadReset(r.err); retry++ {
		s.stats.mu.Lock()
		s.stats.reloadResets = append(s.stats.reloadResets, fmt.Sprintf("%s: %v", kind, r.err))
		s.stats.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		kind, r, problem = s.attempt(ctx, i, kind, f)
	}
	s.stats.record(kind, time.Since(began), r, problem)
}

// reloadReset says whether err is a connection closed or reset before
// any answer.
func reloadReset(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

func (s *soak) attempt(ctx context.Context, i int64, kind string, f *soakFlow) (string, reply, string) {
	var r reply
	problem := ""
	switch kind {
	case "discovery":
		r = s.o.request(ctx, http.MethodGet, discoveryPaths[(i/10)%int64(len(discoveryPaths))], "", "", nil)
		if r.status != 200 {
			problem = "want 200"
		}
	case "graphql":
		r = s.o.request(ctx, http.MethodPost, "/account/graphql", s.member, viewerQuery, nil)
		if r.status != 200 || !strings.Contains(string(r.body), "student@demo.school") {
			problem = "want 200 with the viewer"
		}
	case "mcp":
		r = s.o.request(ctx, http.MethodPost, "/mcp", "", mcpSearch, mcpHeaders)
		if b := string(r.body); r.status != 200 || !strings.Contains(b, `"result"`) || !strings.Contains(b, `photography`) ||
			strings.Contains(b, `"isError":true`) {
			problem = "want a search_catalog result"
		}
	default:
		return s.flowStep(ctx, f)
	}
	return kind, r, problem
}

func (s *soak) flowStep(ctx context.Context, f *soakFlow) (string, reply, string) {
	switch f.step {
	case 0:
		code, verifier, r := s.o.authorize(ctx)
		if code == "" {
			return "authorize", r, "want a 302 with a code"
		}
		f.code, f.verifier, f.step = code, verifier, 1
		return "authorize", r, ""
	case 1:
		r := s.o.exchange(ctx, f.code, f.verifier)
		p, ok := r.pair()
		switch {
		case r.err != nil:
			return "exchange", r, ""
		case !ok || p.IDToken == "":
			f.step = 0
			return "exchange", r, "want tokens and an ID token"
		}
		f.pair, f.step = p, 2
		return "exchange", r, ""
	case 2:
		r := s.o.refresh(ctx, f.pair.Refresh)
		p, ok := r.pair()
		switch {
		case r.err != nil:
			return "refresh", r, ""
		case !ok:
			f.step = 0
			return "refresh", r, "want a new pair"
		}
		f.pair, f.step = p, 3
		return "refresh", r, ""
	case 3:
		r := s.o.revoke(ctx, f.pair.Refresh)
		switch {
		case r.err != nil:
			return "revoke", r, ""
		case r.status != 200:
			f.step = 0
			return "revoke", r, "want 200"
		}
		f.step = 4
		return "revoke", r, ""
	default:
		r := s.o.request(ctx, http.MethodPost, "/account/graphql", f.pair.Access, viewerQuery, nil)
		if r.err != nil {
			return "graphql revoked", r, ""
		}
		f.step = 0
		if r.status != 401 {
			return "graphql revoked", r, "want 401 for a revoked grant's access token"
		}
		return "graphql revoked", r, ""
	}
}

// run paces requests at soakRate until ctx ends. A request that falls due
// while every worker is busy (or while this process is starved of CPU) is
// skipped and counted as missed rather than sent late in a burst, so the
// rate never exceeds soakRate.
func (s *soak) run(ctx context.Context) {
	work := make(chan struct{})
	var wg sync.WaitGroup
	for range soakWorkers {
		wg.Go(func() {
			for range work {
				s.one(context.Background())
			}
		})
	}
	began := time.Now()
	sent := int64(0)
	tick := time.NewTicker(time.Second / soakRate)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			close(work)
			wg.Wait()
			s.missed.Add(int64(time.Since(began).Seconds()*soakRate) - sent)
			return
		case <-tick.C:
			select {
			case work <- struct{}{}:
				sent++
			default:
			}
		}
	}
}

// sample is Caddy's goroutine count and resident memory at one moment.
type sample struct {
	name       string
	goroutines int
	rss        int64
}

func (s sample) String() string {
	return fmt.Sprintf("%-22s goroutines %4d  RSS %6.1f MB", s.name, s.goroutines, float64(s.rss)/(1<<20))
}

func sampleCaddy(t *testing.T, gw *gateway, name string) sample {
	t.Helper()
	_, _, body := get(t, "http://"+gw.AdminAddr+"/debug/pprof/goroutine?debug=1")
	line, _, _ := strings.Cut(string(body), "\n")
	n, err := strconv.Atoi(strings.TrimPrefix(line, "goroutine profile: total "))
	if err != nil {
		t.Fatalf("goroutine profile: %q", line)
	}
	return sample{name: name, goroutines: n, rss: rssOf(t, gw.pid())}
}

// rssOf reads a process's resident set size.
func rssOf(t *testing.T, pid int) int64 {
	t.Helper()
	m, err := procstat.ReadMemory(pid)
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return m.RSS
}

// TestSoak runs a paced mixed load — discovery, authorize, code exchange,
// refresh, revocation, protected GraphQL and MCP search — reloads the
// config in the middle, and asserts no 5xx, no transport error, no wrong
// answer, tokens that outlive the reload, and no goroutine or memory
// growth in Caddy.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) { soakOn(t, kind) })
	}
}

func soakOn(t *testing.T, kind string) {
	duration := soakDuration(t)
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	redirect := "https://soak-app.example/callback" // https: the remembered consent answers at once
	block := siteBlockOn(t, kind, port, sch.URL, filepath.Join(dir, "site"),
		vendorBlock("Soak App", "soak-app", redirect, "member", loadScope)+"\t\trate_limit off\n")
	gw := startGateway(t, dir, block)
	o := signInForLoad(t, gw.URL, "soak-app", redirect, loadScope, "student@demo.school", "student")
	ctx := t.Context()

	// issue runs a whole authorize and exchange outside the load.
	issue := func() tokenPair {
		t.Helper()
		code, verifier, r := o.authorize(ctx)
		if code == "" {
			t.Fatalf("authorize: %v", r)
		}
		r = o.exchange(ctx, code, verifier)
		p, ok := r.pair()
		if !ok {
			t.Fatalf("exchange: %v", r)
		}
		return p
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := o.request(ctx, http.MethodPost, "/mcp", "", mcpSearch, mcpHeaders)
		if r.err == nil && r.status == 200 && strings.Contains(string(r.body), "photography") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the catalog was never imported: %v", r)
		}
		time.Sleep(200 * time.Millisecond)
	}

	s := &soak{o: o, member: issue().Access, stats: &soakStats{latency: map[string][]time.Duration{}},
		flows: make(chan *soakFlow, soakFlows)}
	for range soakFlows {
		s.flows <- &soakFlow{}
	}
	var samples []sample
	snap := func(name string) sample {
		sm := sampleCaddy(t, gw, name)
		samples = append(samples, sm)
		return sm
	}
	// quiet samples Caddy with no load and no client connection open, so
	// that what remains is Caddy's own.
	quiet := func(name string) sample {
		o.http.CloseIdleConnections()
		time.Sleep(500 * time.Millisecond)
		return snap(name)
	}

	// Warm-up: caches, connection pools, the heap's working size.
	warm, stopWarm := context.WithTimeout(ctx, soakWarmUp)
	s.run(warm)
	stopWarm()
	quietStart := quiet("quiet after warm-up")

	began := time.Now()
	load, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{})
	go func() { s.run(load); close(done) }()
	time.Sleep(time.Second)
	start := snap("start (under load)")

	// The middle: tokens issued now must outlive a reload of the same
	// config, and no request may fail while it happens.
	time.Sleep(time.Until(began.Add(duration / 2)))
	snap("middle (under load)")
	before := make([]tokenPair, 5)
	for i := range before {
		before[i] = issue()
	}
	s.stats.mu.Lock()
	atReload := s.stats.total
	s.stats.mu.Unlock()
	loads := strings.Count(gw.proc.out.String(), autosaved)
	reloadBegan := time.Now()
	s.reloading.Store(true)
	gw.forceReload()
	reloadTook := time.Since(reloadBegan)
	time.AfterFunc(time.Second, func() { s.reloading.Store(false) })
	if n := strings.Count(gw.proc.out.String(), autosaved); n != loads+1 {
		t.Errorf("Caddy logged %d config loads around the reload, want 1", n-loads)
	}
	time.Sleep(time.Second)
	s.stats.mu.Lock()
	aroundReload := s.stats.total - atReload
	s.stats.mu.Unlock()
	for i, p := range before {
		r := o.request(ctx, http.MethodPost, "/account/graphql", p.Access, viewerQuery, nil)
		if r.err != nil || r.status != 200 {
			t.Errorf("access token %d, issued before the reload, after it: %v", i, r)
		}
		if _, ok := o.refresh(ctx, p.Refresh).pair(); !ok {
			t.Errorf("refresh token %d, issued before the reload, does not refresh after it", i)
		}
	}
	snap("after reload (load)")

	time.Sleep(time.Until(began.Add(duration)))
	end := snap("end (under load)")
	stop()
	<-done
	elapsed := time.Since(began)
	quietEnd := quiet("quiet at the end")

	// Report.
	st := s.stats
	st.mu.Lock()
	defer st.mu.Unlock()
	t.Logf("%d requests in %v after a %v warm-up (%.0f/s; target %d/s, %d skipped); "+
		"the reload took %v, %d requests answered in the second after it began",
		st.total, elapsed.Round(time.Millisecond), soakWarmUp, float64(st.total)/(elapsed+soakWarmUp).Seconds(),
		soakRate, s.missed.Load(), reloadTook.Round(time.Millisecond), aroundReload)
	kinds := make([]string, 0, len(st.latency))
	for k := range st.latency {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		l := st.latency[k]
		slices.Sort(l)
		t.Logf("  %-16s n=%5d  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms", k, len(l),
			ms(percentile(l, 0.5)), ms(percentile(l, 0.99)), ms(l[len(l)-1]))
	}
	for _, sm := range samples {
		t.Logf("  %s", sm)
	}
	t.Logf("requests the reload cut off before any answer (Caddy's hand-over of connections; each retried): %d %v",
		len(st.reloadResets), st.reloadResets)

	// Assert.
	if st.server != 0 || st.transport != 0 || st.wrong != 0 {
		t.Errorf("%d 5xx, %d transport errors, %d wrong answers; the first:\n%s",
			st.server, st.transport, st.wrong, strings.Join(st.failures, "\n"))
	}
	if lines := errorLogs(gw.proc.out.String()); len(lines) > 0 {
		t.Errorf("Caddy logged errors:\n%s", strings.Join(lines, "\n"))
	}
	// On a busy machine (CI runs packages in parallel) the pace may sag;
	// half of it still soaks, less means the generator is broken.
	if min := int(0.5 * soakRate * (elapsed + soakWarmUp).Seconds()); st.total < min {
		t.Errorf("only %d requests were sent, want at least %d: the load generator could not keep the pace", st.total, min)
	}
	if end.goroutines > start.goroutines+soakGoroutineSlack {
		t.Errorf("goroutines grew under load: %d at the start, %d at the end", start.goroutines, end.goroutines)
	}
	if quietEnd.goroutines > quietStart.goroutines+soakGoroutineSlack {
		t.Errorf("goroutines grew: %d when quiet after the warm-up, %d when quiet at the end", quietStart.goroutines, quietEnd.goroutines)
	}
	if limit := int64(soakRSSFactor*float64(quietStart.rss)) + soakRSSSlack; end.rss > limit || quietEnd.rss > limit {
		t.Errorf("RSS grew: %.1f MB after the warm-up, %.1f MB at the end under load, %.1f MB quiet at the end (limit %.1f MB)",
			mb(quietStart.rss), mb(end.rss), mb(quietEnd.rss), mb(limit))
	}
}

// errorLogs are the lines of Caddy's JSON log at level error or worse.
func errorLogs(out string) []string {
	var lines []string
	for line := range strings.Lines(out) {
		for _, level := range []string{`"level":"error"`, `"level":"panic"`, `"level":"fatal"`, "panic:"} {
			if strings.Contains(line, level) {
				lines = append(lines, strings.TrimSpace(line))
				break
			}
		}
	}
	return lines
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mb(b int64) float64         { return float64(b) / (1 << 20) }
