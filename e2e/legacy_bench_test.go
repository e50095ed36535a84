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
// throughput and p99 beside each flood are reported as ratios to the
// victim alone just before (the median of three rounds), with the Caddy
// process's goroutines and the connections open to the hung legacy
// server at the end of a hung phase, and the neighbour's answers. The
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
	neighbourPhase = 4 * time.Second
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
	idle := caddyGoroutines(b, admin)

	// Rounds of the victim alone, then beside the flood, interleaved so
	// that the machine's drift (other work on it) falls on both alike.
	var slowRounds, hungRounds []ratio
	var slowAnswers, hungAnswers *load
	var held, conns int
	for range neighbourRounds {
		alone := runLoad(2, neighbourPhase, vCall)
		stop := startFlood(slowFlood, account(slowSite, sTok))
		time.Sleep(time.Second)
		with := runLoad(2, neighbourPhase, vCall)
		slowAnswers = stop()
		slowRounds = append(slowRounds, ratioOf(b, alone, with))

		alone = runLoad(2, neighbourPhase, vCall)
		stop = startFlood(hungFlood, page)
		time.Sleep(3 * time.Second) // the flood at its height: every place taken, the first timeouts past
		with = runLoad(2, neighbourPhase, vCall)
		held, conns = caddyGoroutines(b, admin), hung.conns()
		hungAnswers = stop()
		hungRounds = append(hungRounds, ratioOf(b, alone, with))
	}
	slowR, hungR := medianRatio(slowRounds), medianRatio(hungRounds)
	b.ReportMetric(slowR.rps, "slow-victim-x")
	b.ReportMetric(slowR.p99, "slow-victim-p99-x")
	b.ReportMetric(slowAnswers.max().Seconds(), "slow-flood-max-s")
	b.ReportMetric(hungR.rps, "hung-victim-x")
	b.ReportMetric(hungR.p99, "hung-victim-p99-x")
	b.ReportMetric(hungAnswers.max().Seconds(), "hung-flood-max-s")
	b.ReportMetric(float64(idle), "goroutines-idle")
	b.ReportMetric(float64(held), "goroutines-hung")
	b.ReportMetric(float64(conns), "legacy-conns-hung")
	b.Logf("victim beside the slow flood, each round (throughput×, p99×): %v; its last round's answers %v, slowest %s", slowRounds, slowAnswers.codes, slowAnswers.max())
	b.Logf("victim beside the hung flood, each round: %v; its last round's answers %v, slowest %s; Caddy goroutines %d idle, %d during the hung flood; %d connections open to the hung legacy server",
		hungRounds, hungAnswers.codes, hungAnswers.max(), idle, held, conns)
}

const neighbourRounds = 3

// ratio is the victim's throughput and p99 beside a flood, each as a
// multiple of its own alone.
type ratio struct{ rps, p99 float64 }

func (r ratio) String() string { return fmt.Sprintf("%.2f×/%.2f×", r.rps, r.p99) }

func ratioOf(tb testing.TB, alone, with *load) ratio {
	for _, l := range []*load{alone, with} {
		if l.codes[200] != l.n {
			tb.Errorf("the victim was not always answered 200: %v", l.codes)
		}
	}
	return ratio{with.rps() / alone.rps(), float64(with.p99()) / float64(alone.p99())}
}

// medianRatio is the median of each figure over the rounds.
func medianRatio(rs []ratio) ratio {
	med := func(f func(ratio) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return ratio{med(func(r ratio) float64 { return r.rps }), med(func(r ratio) float64 { return r.p99 })}
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
