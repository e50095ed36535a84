package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	"github.com/schoolgate/schoolgate/caddymodule"
)

// runOf is a run of n requests of the latency d each, over elapsed.
func runOf(n int, d, elapsed time.Duration, failures int) stats {
	s := stats{requests: n, failures: failures, elapsed: elapsed}
	for range n {
		s.latencies = append(s.latencies, d)
	}
	return s
}

// The ratios are the rounds' own, their median taken: a round whose
// machine was slower for both phases does not tilt the figure, as a
// ratio of medians across rounds would.
func TestSummarizeTakesEachRoundsRatio(t *testing.T) {
	sec := time.Second
	rounds := []noisyRound{
		// round 1: a quiet machine, the flood halves the victim
		{alone: runOf(1000, time.Millisecond, sec, 0), flooded: runOf(500, 4*time.Millisecond, sec, 0), flood: runOf(9000, 7*time.Millisecond, sec, 0)},
		// round 2: a busy machine for both phases, the flood halves it again
		{alone: runOf(200, 10*time.Millisecond, sec, 0), flooded: runOf(100, 20*time.Millisecond, sec, 0), flood: runOf(3000, 9*time.Millisecond, sec, 0)},
		// round 3: quiet, the flood takes 0.6 of it
		{alone: runOf(900, time.Millisecond, sec, 0), flooded: runOf(540, 2*time.Millisecond, sec, 0), flood: runOf(8000, 8*time.Millisecond, sec, 0)},
	}
	s := summarize(rounds)
	if s.rps.median != 0.5 || s.rps.lo != 0.5 || s.rps.hi != 0.6 {
		t.Errorf("throughput ratio %+v, want median 0.5 in 0.5–0.6 (a ratio of the medians would say %.2f)", s.rps, 500.0/900)
	}
	if s.p99.median != 2 || s.p99.lo != 2 || s.p99.hi != 4 {
		t.Errorf("p99 ratio %+v, want median 2 in 2–4", s.p99)
	}
	if s.aloneRPS != 900 || s.floodedRPS != 500 || s.floodRPS != 8000 {
		t.Errorf("medians %v %v %v", s.aloneRPS, s.floodedRPS, s.floodRPS)
	}
	if s.victimLongest != 20*time.Millisecond || s.floodLongest != 9*time.Millisecond {
		t.Errorf("longest %v / %v", s.victimLongest, s.floodLongest)
	}
	if got := s.met(); got != "**not met**: throughput" {
		t.Errorf("met: %q", got)
	}
}

func TestNoisyTargets(t *testing.T) {
	for _, tc := range []struct {
		rps, p99 float64
		failures int
		want     string
	}{
		{0.6, 3, 0, "met"},
		{0.59, 3, 0, "**not met**: throughput"},
		{0.9, 3.1, 0, "**not met**: p99"},
		{1, 1, 1, "**not met**: victim failures"},
		{0.07, 11.4, 0, "**not met**: throughput, p99"},
	} {
		s := noisySummary{rps: spread{median: tc.rps}, p99: spread{median: tc.p99}, victimFailures: tc.failures}
		if got := s.met(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc, got, tc.want)
		}
	}
}

// A refusal is judged by its Retry-After; the counts survive the merge
// of the workers' and the rounds' tallies.
func TestTallyOfAnswers(t *testing.T) {
	tl := newTally(3)
	for range 6 {
		tl.record(0, 200, false)
	}
	tl.record(1, 503, true)
	tl.record(1, 429, false)
	tl.record(2, 503, true)
	tl.record(2, 0, false)
	tl.markBad(0)
	var a answerCount
	a.add(tl.sum())
	a.add(newTally(1).sum())
	if a.total() != 10 || a.refused != 3 || a.refusedWithout != 1 || a.bad != 1 {
		t.Fatalf("%+v", a)
	}
	if got, want := a.shares(), "200 60 %, 503 20 %, no answer 10 %, 429 10 % of 10 (1 of the 200s wrong)"; got != want {
		t.Errorf("shares %q, want %q", got, want)
	}
	if got, want := a.others(), "503 × 2, no answer × 1, 429 × 1, a wrong 200 × 1"; got != want {
		t.Errorf("others %q, want %q", got, want)
	}
	if got, want := a.retryAfter(), "**no**: 1 of 3 without"; got != want {
		t.Errorf("retryAfter %q, want %q", got, want)
	}
	var ok answerCount
	ok.add(answerCount{status: map[int]int{200: 4, 503: 2}, refused: 2})
	if got := ok.retryAfter(); got != "yes (2)" {
		t.Errorf("retryAfter %q", got)
	}
	if got := (answerCount{}).retryAfter(); got != "— (none refused)" {
		t.Errorf("retryAfter of nothing %q", got)
	}
	if got := (answerCount{}).others(); got != "none" {
		t.Errorf("others of nothing %q", got)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 7956: "7,956", 1234567: "1,234,567", -4510: "-4,510"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// The budget check counts by whole seconds of the window only: the
// warm-up (the burst spent) and what came after the window are out.
func TestPerSecond(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	got := perSecond(ms(100, 1999, 2000, 2500, 2999, 3000, 4999, 5000, 9000), 2*time.Second, 3*time.Second)
	// [2 s, 3 s) holds 2000, 2500 and 2999; [3 s, 4 s) 3000; [4 s, 5 s) 4999.
	if want := []int{3, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("perSecond %v, want %v", got, want)
	}
	if got := perSecond(nil, 0, 1500*time.Millisecond); !slices.Equal(got, []int{0}) {
		t.Errorf("a window of 1.5 s: %v, want one whole second", got)
	}
	for _, tc := range []struct {
		counts []int
		want   bool
	}{
		{[]int{90, 100, 110}, true},
		{[]int{100, 89, 100}, false},
		{[]int{100, 111}, false},
		{[]int{2724}, false},
		{nil, false},
	} {
		if got := budgetMet(tc.counts, 100); got != tc.want {
			t.Errorf("budgetMet(%v, 100) = %v", tc.counts, got)
		}
	}
}

func TestNoisySizes(t *testing.T) {
	base := config{rounds: 5, duration: 4 * time.Second, concurrency: 64, courses: 10000, exchanges: 20000}
	nc, err := noisySizes(base, "dir,postgres")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(nc.floods, floodNames) || nc.victimC != 2 || nc.floodC != 64 || nc.budgetClientsPerInstance != 32 {
		t.Errorf("defaults: %+v", nc)
	}
	smoke := base
	smoke.smoke = true
	if nc, _ := noisySizes(smoke, "dir"); nc.rounds != 1 || nc.duration > time.Second || nc.legacyDelay > time.Second || nc.budgetWindow < time.Second {
		t.Errorf("smoke: %+v", nc)
	}
	only := base
	only.only = "legacy,mcp"
	if nc, err := noisySizes(only, "dir"); err != nil || !slices.Equal(nc.floods, []string{"legacy", "mcp"}) {
		t.Errorf("-only legacy,mcp: %v %v", nc.floods, err)
	}
	for _, tc := range []struct {
		only, registries, want string
	}{
		{"protected", "dir", `unknown flood "protected"`},
		{"", "bolt", `unknown registry "bolt"`},
	} {
		c := base
		c.only = tc.only
		if _, err := noisySizes(c, tc.registries); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("-only %q -registries %q: %v, want %q", tc.only, tc.registries, err, tc.want)
		}
	}
}

// testRun is a run whose configuration can be generated without
// processes.
func testRun() *noisyRun {
	n := &noisyRun{cfg: noisyConfig{global: "schoolgate {\n\t\tfair_share {\n\t\t\twait 1s\n\t\t}\n\t}"},
		upstream: "http://127.0.0.1:7001", slowUpstream: "http://127.0.0.1:7002"}
	n.vendorsJSON, _ = json.Marshal([]map[string]any{{"name": "Bench Agent", "client_id": benchClientID,
		"redirect_uris": []string{benchRedirect}, "audience": "member", "scopes": strings.Fields(benchScope)}})
	return n
}

// The records are school_gateway JSON the module takes: unknown or
// misspelt fields are refused, so a rename in the module fails here
// rather than as a school that never serves in the middle of a run.
func TestNoisyRecordsAreGatewayJSON(t *testing.T) {
	n := testRun()
	schools := append(n.schools(), noisySchool{name: budgetSchool, upstream: n.upstream, budgetRate: 100})
	for _, s := range schools {
		var g caddymodule.Gateway
		if err := caddy.StrictUnmarshalJSON(n.schoolConfig(s), &g); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		wantUp := n.upstream
		if s.name == neighbourSchool {
			wantUp = n.slowUpstream // the legacy flood's slow server is the neighbour's alone
		}
		if g.Upstream != wantUp || g.Catalog != n.upstream+"/catalog.json" || g.RateLimits == nil || !g.RateLimits.Off || len(g.Vendors) != 1 {
			t.Errorf("%s: %+v", s.name, g)
		}
		if s.budgetRate > 0 {
			if g.Budget == nil || g.Budget.Requests == nil || g.Budget.Requests.Events != 100 || time.Duration(g.Budget.Requests.Period) != time.Second {
				t.Errorf("%s: budget %+v", s.name, g.Budget)
			}
		} else if g.Budget != nil {
			t.Errorf("%s: a budget it was not given", s.name)
		}
	}
}

// The site blocks adapt: three schools, each its own issuer on the port,
// the neighbour in front of the slow legacy server, the extra global
// options in place.
func TestNoisySiteBlocksAdapt(t *testing.T) {
	n := testRun()
	cf := n.sitesCaddyfile("127.0.0.1:2999", "/tmp/noisy-test", 8443)
	raw, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, cf)
	}
	js := string(raw)
	if !strings.Contains(js, `"fair_share":{"wait":1000000000}`) {
		t.Errorf("the extra global options are not in place:\n%s", js)
	}
	var adapted struct {
		Apps struct {
			HTTP struct {
				Servers map[string]struct {
					Routes []struct {
						Handle []struct {
							Routes []struct {
								Handle []map[string]any `json:"handle"`
							} `json:"routes"`
						} `json:"handle"`
					} `json:"routes"`
				} `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(raw, &adapted); err != nil {
		t.Fatal(err)
	}
	upstreams := map[string]string{}
	for _, srv := range adapted.Apps.HTTP.Servers {
		for _, r := range srv.Routes {
			for _, h := range r.Handle {
				for _, sub := range h.Routes {
					for _, g := range sub.Handle {
						if g["handler"] == "school_gateway" {
							upstreams[fmt.Sprint(g["issuer"])] = fmt.Sprint(g["upstream"])
							if rl, _ := g["rate_limits"].(map[string]any); rl["off"] != true {
								t.Errorf("%s: rate limits on", g["issuer"])
							}
						}
					}
				}
			}
		}
	}
	want := map[string]string{"http://victim.localhost:8443": n.upstream, "http://neighbour.localhost:8443": n.slowUpstream,
		"http://bystander.localhost:8443": n.upstream}
	if !maps.Equal(upstreams, want) {
		t.Errorf("schools and their legacy servers: %v, want %v", upstreams, want)
	}
	budget := n.siteBlock(noisySchool{name: budgetSchool, upstream: n.upstream, budgetRate: 100}, 8443, "/tmp/noisy-test/m")
	raw, _, err = caddyconfig.GetAdapter("caddyfile").Adapt([]byte(budget), nil)
	if err != nil || !strings.Contains(string(raw), `"budget":{"requests":{"burst":100,"events":100,"period":1000000000}}`) {
		t.Errorf("a budget site block: %v\n%s", err, raw)
	}
}

func TestBudgetReading(t *testing.T) {
	for _, tc := range []struct {
		counts []int
		want   string
	}{
		{[]int{100, 104, 96}, ""},
		{[]int{200, 196, 204}, "as if each instance kept it alone"},
		{[]int{2724}, "this build did not hold the school to it"},
		{[]int{100, 130, 70}, "some second fell outside 90–110"},
	} {
		if got := budgetReading(tc.counts, 100); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%v: %q, want %q", tc.counts, got, tc.want)
		}
	}
}

// The victim's process: its answers and latencies come back whole, a
// refusal counted as the victim's failure.
func TestServeLoadRoundTrip(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "victim.localhost:1" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "wrong request", http.StatusBadRequest)
			return
		}
		if n.Add(1)%3 == 0 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"marker":true}`))
	}))
	defer srv.Close()
	port, _ := strconv.Atoi(srv.URL[strings.LastIndex(srv.URL, ":")+1:])
	spec := victimLoad{Port: port, Clients: 2, Duration: 200 * time.Millisecond, Request: requestSpec{Method: http.MethodGet,
		URL: "http://victim.localhost:1/x", Header: map[string]string{"Authorization": "Bearer tok"}, Want: `"marker"`}}
	in, _ := json.Marshal(spec)
	var out bytes.Buffer
	if err := serveLoad(bytes.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	var r victimResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	s, a := r.stats(), r.answers()
	if s.requests < 10 || s.requests != a.total() || s.elapsed < 200*time.Millisecond {
		t.Fatalf("%d requests, %d answers, %v", s.requests, a.total(), s.elapsed)
	}
	if a.status[400] != 0 || s.failures != a.status[503] || a.refused != a.status[503] || a.refusedWithout != 0 ||
		a.status[200]+a.status[503] != a.total() || s.firstErr == nil {
		t.Errorf("stats %+v, answers %+v", s, a)
	}
	if !slices.IsSorted(s.latencies) {
		t.Error("latencies not sorted")
	}
}
