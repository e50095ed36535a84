package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkLegacyNeighbour measures what a neighbour's slow or dead legacy
// server costs a school sharing the instance, through a real Caddy:
//
//   - slow: the neighbour's 64 clients call its Account API, which its
//     legacy server answers in 2 s;
//   - hung: the neighbour's flood clients ask for pages of a legacy server
//     that accepts connections and never answers (legacy_timeout 2s
//     here, so that answers come within a phase).
//
// The victim's 2 clients call their own Account API throughout; their
// throughput and p99 are reported as ratios to the victim alone, with the
// Caddy process's goroutines and the connections open to the hung legacy
// server at the end of the hung phase, and the neighbour's answers. The
// flood clients retry at once, ignoring Retry-After: the worst case.
// "bounded" is the school's default legacy_concurrency; "unbounded" one
// so large it is never reached, as before the bound. Run once:
//
//	go test ./e2e -run '^$' -bench LegacyNeighbour -benchtime 1x
func BenchmarkLegacyNeighbour(b *testing.B) {
	for _, tt := range []struct {
		name        string
		concurrency int
	}{{"bounded", 0}, {"unbounded", 1 << 20}} {
		b.Run(tt.name, func(b *testing.B) {
			for range b.N {
				measureNeighbour(b, tt.concurrency)
			}
		})
	}
}

const (
	neighbourPhase = 8 * time.Second
	hungFlood      = 512
	slowFlood      = 64
)

func measureNeighbour(b *testing.B, concurrency int) {
	sch := startSchool(b)
	hung := startHungLegacy(b)
	slow := startSlowLegacy(b, sch.URL, 2*time.Second)
	dir := b.TempDir()
	pv, ph, ps := freePort(b), freePort(b), freePort(b)
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(b))
	clients := vendorBlock("Member App", "member-app", redirect, "member", "openid account:read")
	budget := "\t\tbudget {\n\t\t\tlegacy_timeout 2s\n"
	if concurrency > 0 {
		budget += fmt.Sprintf("\t\t\tlegacy_concurrency %d\n", concurrency)
	}
	budget += "\t\t}\n"
	gw := startGateway(b, dir,
		siteBlock(pv, sch.URL, filepath.Join(dir, "v"), clients),
		siteBlock(ps, slow.URL, filepath.Join(dir, "s"), clients),
		siteBlock(ph, hung.URL, filepath.Join(dir, "h"), budget))
	victim, slowSite, hungSite := gw.URL, fmt.Sprintf("http://127.0.0.1:%d", ps), fmt.Sprintf("http://127.0.0.1:%d", ph)
	vTok := tokenFor(b, victim, "member-app", redirect, "openid account:read", "student@demo.school", "student").AccessToken
	sTok := tokenFor(b, slowSite, "member-app", redirect, "openid account:read", "student@demo.school", "student").AccessToken
	admin := "http://" + gw.AdminAddr
	account := func(origin, token string) func(*http.Client) int {
		return func(c *http.Client) int {
			req, _ := http.NewRequest("POST", origin+"/account/graphql", strings.NewReader(viewerQuery))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			return send(c, req)
		}
	}
	page := func(c *http.Client) int {
		req, _ := http.NewRequest("GET", hungSite+"/courses/held", nil)
		return send(c, req)
	}
	vCall := account(victim, vTok)
	// Warm: the victim's token validated, connections open.
	runLoad(2, time.Second, vCall)

	alone := runLoad(2, neighbourPhase, vCall)
	idle := caddyGoroutines(b, admin)

	stop := startFlood(slowFlood, account(slowSite, sTok))
	withSlow := runLoad(2, neighbourPhase, vCall)
	slowAnswers := stop()

	stop = startFlood(hungFlood, page)
	time.Sleep(3 * time.Second) // the flood at its height: every place taken, the first timeouts past
	withHung := runLoad(2, neighbourPhase, vCall)
	held, conns := caddyGoroutines(b, admin), hung.conns()
	hungAnswers := stop()

	b.ReportMetric(alone.rps(), "victim-alone-req/s")
	b.ReportMetric(withSlow.rps()/alone.rps(), "slow-victim-x")
	b.ReportMetric(float64(withSlow.p99())/float64(alone.p99()), "slow-victim-p99-x")
	b.ReportMetric(slowAnswers.max().Seconds(), "slow-flood-max-s")
	b.ReportMetric(withHung.rps()/alone.rps(), "hung-victim-x")
	b.ReportMetric(float64(withHung.p99())/float64(alone.p99()), "hung-victim-p99-x")
	b.ReportMetric(hungAnswers.max().Seconds(), "hung-flood-max-s")
	b.ReportMetric(float64(idle), "goroutines-idle")
	b.ReportMetric(float64(held), "goroutines-hung")
	b.ReportMetric(float64(conns), "legacy-conns-hung")
	b.Logf("victim alone %.0f req/s p99 %s; with the slow flood %.0f req/s p99 %s (flood answers %v, slowest %s); "+
		"with the hung flood %.0f req/s p99 %s, max %s (flood answers %v, slowest %s); Caddy goroutines %d idle, %d during the hung flood; %d connections open to the hung legacy server",
		alone.rps(), alone.p99(), withSlow.rps(), withSlow.p99(), slowAnswers.codes, slowAnswers.max(),
		withHung.rps(), withHung.p99(), withHung.max(), hungAnswers.codes, hungAnswers.max(), idle, held, conns)
	for _, r := range []*load{alone, withSlow, withHung} {
		if r.codes[200] != r.n {
			b.Errorf("the victim was not always answered 200: %v", r.codes)
		}
	}
}

// startSlowLegacy is a legacy server that answers its Account API after
// delay, and everything else at once (the demo school's answers).
func startSlowLegacy(tb testing.TB, school string, delay time.Duration) *httptest.Server {
	tb.Helper()
	u, _ := url.Parse(school)
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/account/graphql" {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// load is what clients were answered in a phase.
type load struct {
	n     int
	took  time.Duration
	lat   []time.Duration
	codes map[int]int
}

func (l *load) rps() float64 { return float64(l.n) / l.took.Seconds() }

func (l *load) p99() time.Duration {
	if len(l.lat) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(l.lat))
	return s[len(s)*99/100]
}

func (l *load) max() time.Duration {
	if len(l.lat) == 0 {
		return 0
	}
	return slices.Max(l.lat)
}

// runLoad runs n clients for d, each sending its next request when the
// last is answered.
func runLoad(n int, d time.Duration, call func(*http.Client) int) *load {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return loop(ctx, n, call)
}

// startFlood runs n clients until the returned stop, which returns what
// they were answered.
func startFlood(n int, call func(*http.Client) int) (stop func() *load) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *load)
	go func() { done <- loop(ctx, n, call) }()
	return func() *load {
		cancel()
		return <-done
	}
}

func loop(ctx context.Context, n int, call func(*http.Client) int) *load {
	tr := &http.Transport{MaxIdleConnsPerHost: n}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	out := &load{codes: map[int]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				code := call(c)
				took := time.Since(t0)
				mu.Lock()
				out.n++
				out.codes[code]++
				out.lat = append(out.lat, took)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	out.took = time.Since(start)
	return out
}

// send makes one request; a transport error is status 0.
func send(c *http.Client, req *http.Request) int {
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// caddyGoroutines is the Caddy process's goroutine count (its admin
// endpoint's pprof).
func caddyGoroutines(tb testing.TB, admin string) int {
	tb.Helper()
	_, _, body := get(tb, admin+"/debug/pprof/goroutine?debug=1")
	first, _, _ := strings.Cut(string(body), "\n")
	n, err := strconv.Atoi(strings.TrimPrefix(first, "goroutine profile: total "))
	if err != nil {
		tb.Fatalf("goroutine profile: %q", first)
	}
	return n
}
