package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schoolgate/schoolgate/internal/dpopclient"
	"github.com/schoolgate/schoolgate/internal/procstat"
)

// target is one thing measured: a name and its request, and in the
// peers' scenarios (-peers) the server processes whose CPU it costs.
type target struct {
	name    string
	req     request
	servers []serverProc
	// prepare, when set, runs before each of the target's runs, outside
	// the measured time, given the highest rate a target of the scenario
	// answered so far (0 before any).
	prepare func(rate float64)
	// pid is the Caddy process that serves the target, when it is not
	// the stack's (-ab's older build), and admin its admin endpoint,
	// where -profile's profiles come from.
	pid   func() int
	admin string
}

// bench holds what the scenarios share.
type bench struct {
	cfg    config
	stack  *stack
	client *http.Client
	oauth  *oauthClient
	member tokens
	out    *strings.Builder
	notes  strings.Builder // printed after the table
	grants int             // grants issued so far (live: none is revoked)
	tabled bool            // the table's header is written
	// peerTable is the peers' table (opcpu.go), printed after the other.
	peerTable strings.Builder

	// assertionMember is a member token of the school with identity_headers
	// assertion (tokens are bound to their school's origin).
	assertionMember tokens

	// dpopKey is the bench client's DPoP key, dpopMember a member token
	// bound to it and dpopOAuth the client that sends proofs (dpop.go).
	dpopKey    *dpopclient.Key
	dpopMember tokens
	dpopOAuth  *oauthClient
}

func run(cfg config) error {
	st, err := startStack(cfg)
	defer st.stop()
	if err != nil {
		return err
	}
	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096,
			IdleConnTimeout: 90 * time.Second, DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	b := &bench{cfg: cfg, stack: st, client: client, oauth: &oauthClient{origin: st.gateway, http: client},
		out: &strings.Builder{}}
	fmt.Fprintf(b.out, "machine: %s; %d clients, %d rounds of %s per target, %d courses\n\n",
		machine(), cfg.concurrency, cfg.rounds, cfg.duration, cfg.courses)
	if err := b.setup(); err != nil {
		return err
	}
	for _, sc := range []struct {
		name string
		run  func() error
	}{{"protected", b.protected}, {"mcp", b.mcp}, {"discovery", b.discovery}, {"token", b.tokenEndpoint},
		{"store", b.store}, {"memory", b.memory},
		{scenarioForwardAuth, b.forwardAuthScenario}, {scenarioOIDCProvider, b.oidcProviderScenario},
		{scenarioHydra, b.hydraScenario}} {
		if !cfg.runs(sc.name) || isPeerScenario(sc.name) && !cfg.runsPeer(sc.name) {
			continue
		}
		if err := sc.run(); err != nil {
			b.print()
			return err
		}
	}
	b.print()
	return nil
}

// print prints the tables and the notes.
func (b *bench) print() {
	fmt.Print(b.out.String(), b.peerTable.String(), b.notes.String())
}

// runs reports whether the scenario is selected (-only, else all).
func (c config) runs(scenario string) bool {
	return c.only == "" || slices.Contains(strings.Split(c.only, ","), scenario)
}

// runsPeer reports whether a peer scenario is selected: only by name
// (-peers names them all), never by default.
func (c config) runsPeer(scenario string) bool {
	return c.only != "" && c.runs(scenario)
}

func isPeerScenario(name string) bool {
	return name == scenarioForwardAuth || name == scenarioOIDCProvider || name == scenarioHydra
}

// setup waits for the catalog import and gets a member token.
func (b *bench) setup() error {
	deadline := time.Now().Add(60 * time.Second)
	for b.searchOnce(b.stack.gateway, "") != nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("the gateway never served the catalog: %v", b.searchOnce(b.stack.gateway, ""))
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctx := context.Background()
	code, err := b.oauth.authorize(ctx)
	if err != nil {
		return err
	}
	b.member, err = b.oauth.exchange(ctx, code)
	b.grants++
	if err != nil {
		return err
	}
	if err := b.dpopSetup(ctx); err != nil {
		return err
	}
	if b.stack.assertion == "" {
		return nil
	}
	b.assertionMember, err = memberToken(ctx, &oauthClient{origin: b.stack.assertion, http: b.client})
	if err != nil {
		return fmt.Errorf("the school with identity_headers assertion: %v", err)
	}
	return nil
}

func memberToken(ctx context.Context, o *oauthClient) (tokens, error) {
	code, err := o.authorize(ctx)
	if err != nil {
		return tokens{}, err
	}
	return o.exchange(ctx, code)
}

// compare runs the targets interleaved for cfg.rounds rounds and
// reports the medians, each against the last target (the baseline).
func (b *bench) compare(scenario string, targets ...target) error {
	_, err := b.compareRuns(scenario, targets...)
	return err
}

// compareRuns is compare, returning each target's runs.
func (b *bench) compareRuns(scenario string, targets ...target) ([][]stats, error) {
	runs, err := b.interleave(scenario, targets...)
	if err != nil {
		return nil, err
	}
	base := median(runs[len(runs)-1], stats.rps)
	for i, t := range targets {
		ratio := "baseline"
		if i < len(targets)-1 {
			ratio = fmt.Sprintf("%.2f×", median(runs[i], stats.rps)/base)
		}
		b.row(scenario, t.name, runs[i], ratio)
	}
	return runs, nil
}

// interleave runs the targets interleaved for cfg.rounds rounds and
// returns each target's runs.
func (b *bench) interleave(scenario string, targets ...target) ([][]stats, error) {
	runs := make([][]stats, len(targets))
	var fastest float64
	for r := 0; r < b.cfg.rounds; r++ {
		for i, t := range targets {
			if t.prepare != nil {
				t.prepare(fastest)
			}
			var profiling sync.WaitGroup
			if r == 0 && b.cfg.profile != "" && strings.HasPrefix(scenario, b.cfg.profile) {
				// Waited for before the next target's: Go runs one CPU
				// profile at a time.
				admin := cmp.Or(t.admin, b.stack.adminAddr)
				profiling.Go(func() {
					cpuProfileOf(admin, b.cfg.duration, fmt.Sprintf("bench-%s-%d.pprof", profileName(scenario), i))
				})
			}
			s, _ := onServers(t.servers, func() (stats, error) {
				pid := b.stack.caddyPID
				if t.pid != nil {
					pid = t.pid
				}
				return load(b.cfg.concurrency, b.cfg.duration, 0, pid(), t.req), nil
			})
			profiling.Wait()
			if s.failures > 0 {
				return nil, fmt.Errorf("%s / %s: %d of %d requests failed, first: %v", scenario, t.name, s.failures, s.requests, s.firstErr)
			}
			runs[i] = append(runs[i], s)
			fastest = max(fastest, s.rps())
		}
	}
	return runs, nil
}

func (b *bench) row(scenario, name string, runs []stats, note string) {
	if !b.tabled {
		b.tabled = true
		fmt.Fprintln(b.out, "| scenario | target | req/s | p50 | p99 | Caddy CPU/req | Caddy disk writes/req | vs baseline |")
		fmt.Fprintln(b.out, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	}
	fmt.Fprintf(b.out, "| %s | %s | %.0f | %s | %s | %s | %s | %s |\n", scenario, name,
		median(runs, stats.rps),
		ms(median(runs, func(s stats) float64 { return float64(s.percentile(0.5)) })),
		ms(median(runs, func(s stats) float64 { return float64(s.percentile(0.99)) })),
		us(median(runs, func(s stats) float64 { return float64(s.cpuPerRequest()) })),
		kb(median(runs, stats.writtenPerRequest)), note)
}

func median(runs []stats, f func(stats) float64) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// p99 is the median of the runs' 99th percentiles.
func p99(runs []stats) float64 {
	return median(runs, func(s stats) float64 { return float64(s.percentile(0.99)) })
}

func ms(d float64) string { return fmt.Sprintf("%.2f ms", d/float64(time.Millisecond)) }
func us(d float64) string { return fmt.Sprintf("%.0f µs", d/float64(time.Microsecond)) }
func kb(n float64) string { return fmt.Sprintf("%.1f KB", n/1000) }

// post sends a JSON POST and checks the answer.
func (b *bench) post(ctx context.Context, url, token, body string, hdr map[string]string, want string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	return expect(resp, err, http.StatusOK, want)
}

func (b *bench) get(ctx context.Context, url, want string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := b.client.Do(req)
	return expect(resp, err, http.StatusOK, want)
}

const viewerQuery = `{"query":"{ viewer { id email enrolledCourses(first: 5) { nodes { slug } } } }"}`

// protected: the Account API through the gateway with a member token,
// with a DPoP-bound one, with the eight identity headers and with the
// signed assertion alone, against plain reverse_proxy to the same
// upstream.
func (b *bench) protected() error {
	gw, plain := b.stack.gateway+"/account/graphql", b.stack.plain+"/account/graphql"
	targets := b.withAssertion(
		target{name: "gateway (member token)", req: func(ctx context.Context, _ int) error {
			return b.post(ctx, gw, b.member.Access, viewerQuery, nil, `"viewer"`)
		}},
		target{name: "plain reverse_proxy + the 8 identity headers (header_up)", req: func(ctx context.Context, _ int) error {
			return b.post(ctx, b.stack.plainHeaders+"/account/graphql", "", viewerQuery, nil, `"viewer"`)
		}},
		target{name: "plain reverse_proxy", req: func(ctx context.Context, _ int) error {
			return b.post(ctx, plain, "", viewerQuery, nil, `"viewer"`)
		}})
	// The DPoP-bound token's target second, beside the bearer one.
	runs, err := b.compareRuns("protected /account/graphql", slices.Insert(targets, 1, b.dpopTarget(gw))...)
	if err != nil {
		return err
	}
	b.dpopNote(runs[0], runs[1])
	b.assertionNote("protected", slices.Delete(slices.Clone(runs), 1, 2))
	return b.abProtected()
}

// withAssertion is the targets with the assertion school's second, after
// the gateway's, when that school runs.
func (b *bench) withAssertion(gateway target, others ...target) []target {
	ts := []target{gateway}
	if b.stack.assertion != "" {
		ts = append(ts, b.assertionTarget())
	}
	return append(ts, others...)
}

// assertionTarget is the protected request through the school with
// identity_headers assertion; the upstream answers it only when
// X-School-Assertion verified and came alone (assertion.go), and marks
// the answer.
func (b *bench) assertionTarget() target {
	url := b.stack.assertion + "/account/graphql"
	return target{name: "gateway, identity_headers assertion (member token)", req: func(ctx context.Context, _ int) error {
		return b.post(ctx, url, b.assertionMember.Access, viewerQuery, nil, `"identity":"assertion"`)
	}}
}

// assertionNote states the target of the one-header option, from one
// interleaved run of withAssertion's targets, plain reverse_proxy last.
func (b *bench) assertionNote(scenario string, runs [][]stats) {
	if b.stack.assertion == "" {
		fmt.Fprintf(&b.notes, "\n%s: no target with identity_headers assertion with -build (an older Caddy may not know it)\n", scenario)
		return
	}
	fmt.Fprintf(&b.notes, "\n%s: gateway with identity_headers assertion ÷ plain reverse_proxy in this run: %.2f× (target ≥ 0.95×)\n",
		scenario, median(runs[1], stats.rps)/median(runs[len(runs)-1], stats.rps))
}

var mcpHeaders = map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}

const searchCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_catalog",` +
	`"arguments":{"query":"portrait lighting","limit":10}}}`

func (b *bench) searchOnce(origin, token string) error {
	return b.post(context.Background(), origin+"/mcp", token, searchCall, mcpHeaders, `course-`)
}

// mcp: search_catalog over the generated catalog, anonymous and as a
// member, against a no-op tool of mcp-go behind plain reverse_proxy.
func (b *bench) mcp() error {
	gw, noop := b.stack.gateway+"/mcp", b.stack.noop+"/mcp"
	runs, err := b.compareRuns(fmt.Sprintf("/mcp search_catalog (%d courses)", b.cfg.courses),
		target{name: "gateway, anonymous", req: func(ctx context.Context, _ int) error {
			return b.post(ctx, gw, "", searchCall, mcpHeaders, `course-`)
		}},
		target{name: "gateway, member token", req: func(ctx context.Context, _ int) error {
			return b.post(ctx, gw, b.member.Access, searchCall, mcpHeaders, `course-`)
		}},
		target{name: "mcp-go no-op tool via reverse_proxy", req: func(ctx context.Context, _ int) error {
			return b.post(ctx, noop, "", searchCall, mcpHeaders, `"result"`)
		}})
	if err != nil {
		return err
	}
	// The tail stated relative: an absolute p99 on a shared machine
	// moves with whatever else runs, a ratio within one run much less.
	fmt.Fprintf(&b.notes, "\nMCP tail: search_catalog p99 ÷ the mcp-go no-op tool's p99 in this run: "+
		"%.2f× anonymous, %.2f× with a member token (target ≤ 1.15×)\n", p99(runs[0])/p99(runs[2]), p99(runs[1])/p99(runs[2]))
	return nil
}

// discovery: the metadata documents and the JWKS, with a plain proxied
// small JSON answer as the baseline.
func (b *bench) discovery() error {
	gw := b.stack.gateway
	err := b.compare("discovery",
		target{name: "openid-configuration", req: func(ctx context.Context, _ int) error {
			return b.get(ctx, gw+"/.well-known/openid-configuration", `"issuer"`)
		}},
		target{name: "jwks.json", req: func(ctx context.Context, _ int) error {
			return b.get(ctx, gw+"/.well-known/jwks.json", `"keys"`)
		}},
		target{name: "plain reverse_proxy (small JSON)", req: func(ctx context.Context, _ int) error {
			return b.get(ctx, b.stack.plain+"/", `"ok"`)
		}})
	if err != nil {
		return err
	}
	return b.abDiscovery()
}

// pool hands out prepared items to concurrent workers, and collects.
type pool[T any] struct {
	mu    sync.Mutex
	items []T
	next  atomic.Int64
}

func (p *pool[T]) take() (T, bool) {
	i := p.next.Add(1) - 1
	if i >= int64(len(p.items)) {
		var zero T
		return zero, false
	}
	return p.items[i], true
}

func (p *pool[T]) put(v T) {
	p.mu.Lock()
	p.items = append(p.items, v)
	p.mu.Unlock()
}

// fixedWork runs n requests with c workers and no time limit.
func (b *bench) fixedWork(c, n int, req request) (stats, error) {
	return b.fixedWorkAt(b.stack.caddyPID(), c, n, req)
}

// fixedWorkAt is fixedWork against the Caddy process pid.
func (b *bench) fixedWorkAt(pid, c, n int, req request) (stats, error) {
	s := load(c, 10*time.Minute, n, pid, req)
	if s.failures > 0 {
		return s, fmt.Errorf("%d of %d failed, first: %v", s.failures, s.requests, s.firstErr)
	}
	return s, nil
}

// memory: fills the store to cfg.grants live grants, then restarts
// Caddy on that data and reports start-up time and resident memory.
func (b *bench) memory() error {
	if b.cfg.grants == 0 {
		return nil
	}
	for b.grants < b.cfg.grants {
		n := min(b.cfg.grants-b.grants, 20000)
		codes, _, err := b.codes(n)
		if err != nil {
			return err
		}
		if _, _, err := b.exchangeAll(b.cfg.concurrency, codes); err != nil {
			return err
		}
	}
	before, _ := procstat.ReadMemory(b.stack.caddyPID())
	startup, err := b.stack.restartCaddy()
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := b.searchOnce(b.stack.gateway, b.member.Access); err != nil {
		return fmt.Errorf("after the restart: %v", err)
	}
	firstSearch := time.Since(t0)
	// Serve a little of everything so the caches and the index are warm.
	if _, err := b.fixedWork(b.cfg.concurrency, 2000, func(ctx context.Context, w int) error {
		if w%2 == 0 {
			return b.post(ctx, b.stack.gateway+"/account/graphql", b.member.Access, viewerQuery, nil, `"viewer"`)
		}
		return b.post(ctx, b.stack.gateway+"/mcp", "", searchCall, mcpHeaders, `course-`)
	}); err != nil {
		return err
	}
	after, _ := procstat.ReadMemory(b.stack.caddyPID())
	fmt.Fprintf(b.out, "\nmemory and start-up: %d live grants, %d courses: start-up %s (first MCP search answered %s later); "+
		"Caddy RSS after restart and warm-up %d MB (%d MB heap and stacks + %d MB of the mapped bbolt file); "+
		"after the load that wrote them, before the restart: %d MB + %d MB\n",
		b.grants, b.cfg.courses, startup.Round(time.Millisecond), firstSearch.Round(time.Millisecond),
		after.RSS>>20, after.Anon>>20, after.File>>20, before.Anon>>20, before.File>>20)
	return nil
}

// fileName turns a scenario name into a file name part.
// profileName is fileName, and "-ab" after it for an A/B's scenario
// (whose first word is its scenario's: the profiles would overwrite
// those of the scenario's own targets).
func profileName(scenario string) string {
	if strings.HasSuffix(scenario, "A/B") {
		return fileName(scenario) + "-ab"
	}
	return fileName(scenario)
}

func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(strings.Fields(s)[0]))
}
