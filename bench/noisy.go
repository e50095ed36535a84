package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/registry"
)

// Noisy neighbours (-noisy): what one school's flood does to another
// school of the same Caddy. Three schools share one Caddy (school_platform
// over each registry, then three school_gateway site blocks): a victim
// asked by a few keep-alive clients, a neighbour asked by many, and a
// third that stays idle. For each kind of flood the victim's throughput
// and tail are measured alone and while the neighbour floods, the two
// phases alternated round by round in one run, so that the machine's
// drift falls on both. See BENCHMARKS.md, "Noisy neighbours".

var (
	noisyFlag = flag.Bool("noisy", false, "measure noisy neighbours instead: a victim school alone and while a neighbour school of the same Caddy floods it "+
		"(school_platform of three schools over -registries, and three site blocks); floods chosen with -only discovery,mcp,token,legacy")
	victimC       = flag.Int("victim-c", 2, "with -noisy: the victim's concurrent clients (the neighbour's are -c)")
	victimAsks    = flag.String("victim", "discovery", "with -noisy: the victim's request, the same under every flood: discovery, protected or mcp")
	generator     = flag.String("generator", "net/http", "with -noisy: the load generator of the victim and of the discovery, mcp and legacy floods: net/http's client, or raw: a lean HTTP/1.1 client (rawclient.go) that leaves the shared processors to the gateway")
	legacyDelay   = flag.Duration("legacy-delay", 2*time.Second, "with -noisy: how long the neighbour's legacy server takes to answer its Account API (the legacy flood)")
	noisySites    = flag.Bool("sites", true, "with -noisy: also measure three school_gateway site blocks (-sites=false skips them)")
	budgetRate    = flag.Int("budget-rate", 100, "with -noisy and the postgres registry: the budget (requests/s) of the school of the budget check across two instances; 0 skips it")
	caddyGlobal   = flag.String("caddy-global", "", "with -noisy: more global options for its Caddy, e.g. 'schoolgate { fair_share off }'")
	accountDelayF = flag.Duration("account-delay", 0, "internal: with -serve upstream, how long the Account API takes to answer")
)

// The floods, in the order they run, and the victim's requests.
const (
	floodDiscovery = "discovery"
	floodMCP       = "mcp"
	floodToken     = "token"
	floodLegacy    = "legacy"
)

var floodNames = []string{floodDiscovery, floodMCP, floodToken, floodLegacy}

// The schools of the bench: the victim, the neighbour whose flood it
// suffers, and a third that stays idle (a registry of three).
const (
	victimSchool    = "victim"
	neighbourSchool = "neighbour"
	thirdSchool     = "bystander"
	budgetSchool    = "metered" // not "budget…": the budget check looks for that word in the log
)

// noisyConfig is the scenario's sizes.
type noisyConfig struct {
	victimC, floodC, rounds, courses int
	// exchanges is the least number of authorization codes prepared
	// before each flooded phase of the token flood.
	exchanges int
	// duration is one phase's measured time; warm is how long the flood
	// runs before the victim's measured phase begins; settle is the pause
	// after each phase.
	duration, warm, settle time.Duration
	legacyDelay            time.Duration
	registries             []string
	sites                  bool
	victim                 string
	floods                 []string
	// raw: the lean generator (rawclient.go) instead of net/http's client.
	raw           bool
	build, global string
	smoke         bool
	// profile: a CPU profile and a trace of the first flooded phase of
	// each flood (-profile noisy).
	profile bool
	// The budget check: the rate (0: skipped), its warm-up (the burst
	// spent) and its measured window.
	budgetRate               int
	budgetWarm, budgetWindow time.Duration
	budgetClientsPerInstance int
}

// noisySizes are the scenario's sizes from the flags, or with -smoke tiny
// ones.
func noisySizes(cfg config, registries string) (noisyConfig, error) {
	nc := noisyConfig{victimC: *victimC, floodC: cfg.concurrency, rounds: cfg.rounds, courses: cfg.courses,
		exchanges: cfg.exchanges, duration: cfg.duration, warm: time.Second, settle: 500 * time.Millisecond,
		legacyDelay: *legacyDelay, registries: strings.Split(registries, ","), sites: *noisySites,
		victim: *victimAsks, build: cfg.build, global: *caddyGlobal, raw: *generator == "raw",
		budgetRate: *budgetRate, budgetWarm: 2 * time.Second, budgetWindow: 10 * time.Second,
		budgetClientsPerInstance: max(cfg.concurrency/2, 1), profile: cfg.profile == "noisy"}
	if cfg.smoke {
		nc.smoke = true
		nc.victimC, nc.floodC, nc.rounds, nc.courses, nc.exchanges = min(nc.victimC, 2), 8, 1, 300, 1000
		nc.duration, nc.warm, nc.settle, nc.legacyDelay = 300*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond, 100*time.Millisecond
		nc.budgetWarm, nc.budgetWindow, nc.budgetClientsPerInstance = 300*time.Millisecond, time.Second, 4
	}
	nc.floods = floodNames
	if cfg.only != "" {
		nc.floods = nil
		for _, f := range strings.Split(cfg.only, ",") {
			if !slices.Contains(floodNames, f) {
				return nc, fmt.Errorf("-only with -noisy: unknown flood %q (%s)", f, strings.Join(floodNames, ", "))
			}
			nc.floods = append(nc.floods, f)
		}
	}
	if *generator != "raw" && *generator != "net/http" {
		return nc, fmt.Errorf("-generator: %q is neither raw nor net/http", *generator)
	}
	for _, kind := range nc.registries {
		if kind != "dir" && kind != "postgres" {
			return nc, fmt.Errorf("-registries: unknown registry %q (dir, postgres)", kind)
		}
	}
	if !slices.Contains([]string{floodDiscovery, "protected", floodMCP}, nc.victim) {
		return nc, fmt.Errorf("-victim: %q is not discovery, protected or mcp", nc.victim)
	}
	if nc.victimC < 1 || nc.floodC < 1 {
		return nc, fmt.Errorf("-victim-c and -c must be at least 1")
	}
	return nc, nil
}

// noisyRun is one -noisy run: its processes and its results.
type noisyRun struct {
	cfg                    noisyConfig
	dir, caddyBin          string
	upstream, slowUpstream string // the legacy servers' origins: the victim's and third's, the neighbour's
	vendorsJSON            json.RawMessage
	rows, budget, notes    []string
}

func runNoisy(cfg noisyConfig) error {
	dir, err := os.MkdirTemp("", "schoolgate-noisy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	n := &noisyRun{cfg: cfg, dir: dir}
	progress("noisy", "building Caddy")
	if n.caddyBin, err = buildCaddy(dir, cfg.build); err != nil {
		return err
	}
	stopUpstreams, err := n.startUpstreams()
	defer stopUpstreams()
	if err != nil {
		return err
	}
	n.vendorsJSON, _ = json.Marshal([]map[string]any{{"name": "Bench Agent", "client_id": benchClientID,
		"redirect_uris": []string{benchRedirect}, "audience": "member", "scopes": strings.Fields(benchScope)}})
	loadBefore := loadAverage()
	var failed error
	for _, kind := range cfg.registries {
		if err := n.platform(kind); err != nil {
			failed = fmt.Errorf("noisy, registry %s: %v", kind, err)
			break
		}
	}
	if failed == nil && cfg.sites {
		if err := n.siteBlocks(); err != nil {
			failed = fmt.Errorf("noisy, site blocks: %v", err)
		}
	}
	n.print(loadBefore)
	return failed
}

// startUpstreams starts the two legacy servers: the one of the victim and
// the third school, and the neighbour's, whose Account API answers after
// cfg.legacyDelay. Both serve the generated catalog.
func (n *noisyRun) startUpstreams() (stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return func() {}, err
	}
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	for _, up := range []struct {
		origin *string
		delay  time.Duration
	}{{&n.upstream, 0}, {&n.slowUpstream, n.cfg.legacyDelay}} {
		addr, err := freeAddr()
		if err != nil {
			return stop, err
		}
		cmd := exec.Command(self, "-serve", "upstream", "-addr", addr, "-courses", fmt.Sprint(n.cfg.courses),
			"-account-delay", up.delay.String())
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return stop, err
		}
		cmds = append(cmds, cmd)
		*up.origin = "http://" + addr
		if err := waitUp(*up.origin+"/", 200); err != nil {
			return stop, err
		}
	}
	return stop, nil
}

// noisySchool is one school of the bench as both setups configure it.
type noisySchool struct {
	name, upstream string
	budgetRate     int // requests/s of its budget; 0: none
}

// schools are the three schools of the floods: every one with the
// generated catalog (served by the victim's legacy server), the
// neighbour in front of the slow legacy server.
func (n *noisyRun) schools() []noisySchool {
	return []noisySchool{{name: victimSchool, upstream: n.upstream}, {name: neighbourSchool, upstream: n.slowUpstream},
		{name: thirdSchool, upstream: n.upstream}}
}

// schoolConfig is the school_gateway JSON of a school: its legacy
// server, the catalog, the bench's vendor client, codes that live 10
// minutes (the token flood's are prepared ahead), rate limits off (one
// load generator on one address stands for many clients: what protects
// the victim must be the sharing of the instance, not a per-address
// limit the flood would meet only because of the bench's address), and
// its budget if it has one.
func (n *noisyRun) schoolConfig(s noisySchool) json.RawMessage {
	cfg := map[string]any{"upstream": s.upstream, "catalog": n.upstream + "/catalog.json", "catalog_refresh": "1h",
		"code_ttl": "10m", "rate_limits": map[string]bool{"off": true}, "vendors": n.vendorsJSON}
	if s.budgetRate > 0 {
		cfg["budget"] = map[string]any{"requests": map[string]any{"events": s.budgetRate, "period": "1s"}}
	}
	raw, _ := json.Marshal(cfg)
	return raw
}

// siteBlock is the same school as a site block on port.
func (n *noisyRun) siteBlock(s noisySchool, port int, data string) string {
	budget := ""
	if s.budgetRate > 0 {
		budget = fmt.Sprintf("\n\t\tbudget {\n\t\t\trequests %d/s\n\t\t}", s.budgetRate)
	}
	return fmt.Sprintf(`
http://%[1]s {
	school_gateway %[2]s {
		issuer http://%[1]s
		data %[3]s
		catalog %[4]s/catalog.json refresh 1h
		code_ttl 10m
		rate_limit off%[8]s
		vendor "Bench Agent" {
			client_id %[5]s
			redirect_uri %[6]s
			audience member
			scopes %[7]s
		}
	}
}
`, schoolHost(s.name, port), s.upstream, data, n.upstream, benchClientID, benchRedirect, benchScope, budget)
}

// globalOptions is the Caddyfile's global options block.
func (n *noisyRun) globalOptions(admin, storage string) string {
	return fmt.Sprintf("{\n\tadmin %s\n\tpersist_config off\n\tstorage file_system %s\n\t%s\n}\n", admin, storage, n.cfg.global)
}

func schoolHost(name string, port int) string { return fmt.Sprintf("%s.localhost:%d", name, port) }

func schoolIssuer(name string, port int) string { return "http://" + schoolHost(name, port) }

// platform measures the floods through school_platform over a registry
// of kind; with postgres, the budget check follows.
func (n *noisyRun) platform(kind string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	base := filepath.Join(n.dir, kind)
	if err := os.MkdirAll(base, 0o700); err != nil {
		return err
	}
	progress("noisy", "registry %s: writing the three schools", kind)
	put := func(reg registry.Registry) error {
		for _, s := range n.schools() {
			if _, err := reg.Put(context.Background(), registry.Record{Issuer: schoolIssuer(s.name, port), Config: n.schoolConfig(s)}); err != nil {
				return err
			}
		}
		return nil
	}
	var reg *benchRegistry
	if kind == "postgres" {
		reg, err = openPostgresRegistry(put)
	} else {
		reg, err = openDirRegistry(filepath.Join(base, "registry"), put)
	}
	if err != nil {
		return err
	}
	defer reg.stop()
	c, err := n.startPlatform(base, "a", port, reg.line)
	if err != nil {
		return err
	}
	defer c.stop()
	if err := n.floods("platform, registry "+kind, c, port); err != nil {
		return err
	}
	if kind == "postgres" && n.cfg.budgetRate > 0 {
		progress("noisy", "registry postgres: the budget check, two instances")
		return n.budgetCheck(base, reg, c, port)
	}
	return nil
}

// startPlatform starts a Caddy serving the platform on port.
func (n *noisyRun) startPlatform(base, name string, port int, registryLine string) (*platformCaddy, error) {
	admin, err := freeAddr()
	if err != nil {
		return nil, err
	}
	caddyfile := n.globalOptions(admin, filepath.Join(base, "caddy-storage-"+name)) + fmt.Sprintf(`
http://:%d {
	school_platform {
		%s
		max_active 10
	}
}
`, port, registryLine)
	return launchCaddy(n.caddyBin, base, name, port, admin, caddyfile)
}

// openDirRegistry opens a registry directory at path and fills it.
func openDirRegistry(path string, populate func(registry.Registry) error) (*benchRegistry, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, err
	}
	d, err := registry.OpenDir(path, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	began := time.Now()
	if err := populate(d); err != nil {
		_ = d.Close()
		return nil, err
	}
	return &benchRegistry{Registry: d, line: "registry dir " + path, stop: func() { _ = d.Close() }, written: time.Since(began)}, nil
}

// siteBlocks measures the floods through three school_gateway site blocks.
func (n *noisyRun) siteBlocks() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	base := filepath.Join(n.dir, "sites")
	if err := os.MkdirAll(base, 0o700); err != nil {
		return err
	}
	admin, err := freeAddr()
	if err != nil {
		return err
	}
	c, err := launchCaddy(n.caddyBin, base, "sites", port, admin, n.sitesCaddyfile(admin, base, port))
	if err != nil {
		return err
	}
	defer c.stop()
	return n.floods("site blocks", c, port)
}

// sitesCaddyfile is the three schools as site blocks of one Caddy.
func (n *noisyRun) sitesCaddyfile(admin, base string, port int) string {
	var b strings.Builder
	b.WriteString(n.globalOptions(admin, filepath.Join(base, "caddy-storage")))
	for _, s := range n.schools() {
		b.WriteString(n.siteBlock(s, port, filepath.Join(base, "data-"+s.name)))
	}
	return b.String()
}

// clientFor is a keep-alive client of its own (its own connections)
// dialing port whatever the host name; redirects are not followed.
func clientFor(port, conns int) *http.Client {
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", port))
	}
	return &http.Client{Timeout: time.Minute,
		Transport:     &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, DialContext: dial, DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// loadAverage is /proc/loadavg's three averages, "?" where it cannot tell.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func (n *noisyRun) print(loadBefore string) {
	c := n.cfg
	if c.smoke {
		fmt.Println("(-smoke: the harness checked, the figures meaningless)")
	}
	fmt.Printf("machine: %s; load average before %s, after %s\n", machine(), loadBefore, loadAverage())
	fmt.Printf("victim: %d clients asking %s; neighbour: %d clients; %d rounds of %s per phase (alone, flooded; the flood starts %s before the victim's phase); "+
		"neighbour's legacy server answers its Account API in %s; %d courses\n\n",
		c.victimC, c.victim, c.floodC, c.rounds, c.duration, c.warm, c.legacyDelay, c.courses)
	fmt.Println("| setup | neighbour's flood | victim req/s alone → flooded | flooded ÷ alone (rounds) | victim p99 alone → flooded | flooded ÷ alone (rounds) | victim p50 alone → flooded | victim answers other than 200 | neighbour's answers | neighbour req/s | Retry-After on every 429/503 | longest wait: victim / neighbour | load average after | ≥ 0.6×, ≤ 3× |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | --- | ---: | ---: | --- |")
	for _, r := range n.rows {
		fmt.Println(r)
	}
	if len(n.budget) > 0 {
		fmt.Println()
		fmt.Println("| budget check | instances | clients | seconds | admitted (200) per second in all: min / median / max | mean | target | answers | Retry-After on every 429/503 | offered req/s |")
		fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | ---: |")
		for _, r := range n.budget {
			fmt.Println(r)
		}
	}
	for _, note := range n.notes {
		fmt.Println("\n" + note)
	}
}
