package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/pgstore"
	"github.com/schoolgate/schoolgate/registry"
)

// The soak (-soak <duration>): a platform of many schools on one
// PostgreSQL (registry and stores), served by two Caddy instances, under
// steady mixed traffic for a long time while the registry changes every
// second; what each instance holds (RSS, heap, goroutines, open files,
// connections to PostgreSQL) is sampled at intervals and must not grow.
// At the end: the readings after the warm-up read for a band and a
// slope, every answer's status counted, the answers checked for the
// school asked, and a sample of the tokens issued checked to work or be
// refused for their stated reason. A plot (SVG) and a summary (markdown)
// are written to a directory the run prints. See BENCHMARKS.md, "Soak".

var (
	soakFor      = flag.Duration("soak", 0, "run the soak instead for this long (e.g. 30m): two platform instances on one PostgreSQL under mixed traffic and registry churn, sampled; under 10m it is a smoke with few schools")
	soakSchoolsF = flag.Int("soak-schools", 10000, "with -soak: schools in the registry (a soak under 10m takes at most 200 unless this is given)")
	soakOut      = flag.String("soak-out", "", "with -soak: the directory for the plot and summary (default: a new one under the system's temporary directory)")
)

// soakConfig is the soak's sizes.
type soakConfig struct {
	duration, warmup, every time.Duration
	schools, maxActive      int
	// tokenSchools are the schools of the token and MCP traffic (s0 …);
	// the flooded school is the last registered.
	tokenSchools, flooders int
	out                    string
	smoke                  bool
}

// soakSizes are the soak's sizes for a run of d: a real soak samples
// every minute after a 5-minute warm-up; a shorter one (a smoke) scales
// both to the run and takes few schools.
func soakSizes(d time.Duration) soakConfig {
	sc := soakConfig{duration: d, warmup: 5 * time.Minute, every: time.Minute, schools: *soakSchoolsF,
		maxActive: 1000, tokenSchools: 100, flooders: 160, out: *soakOut}
	if d < 10*time.Minute {
		sc.smoke = true
		sc.warmup, sc.every = d/4, max(d/10, time.Second)
		given := false
		flag.Visit(func(f *flag.Flag) { given = given || f.Name == "soak-schools" })
		if !given {
			sc.schools = min(sc.schools, 200)
		}
		sc.maxActive, sc.tokenSchools = 50, 20
	}
	sc.tokenSchools = min(sc.tokenSchools, sc.schools-1)
	return sc
}

// soakRun is one soak: its processes, the schools' origins and what was
// sampled and counted.
type soakRun struct {
	cfg                   soakConfig
	dir, caddyBin         string
	upstream, vendorsJSON string
	port                  int // every school's issuer names instance a's port
	instances             []*platformCaddy
	reg                   registry.Registry
	dsn                   string
	pg                    *pgx.Conn
	samples               map[string][]soakSample
	loadBefore, loadAfter string
	commit                string // what Caddy was built from
	began                 time.Time
}

func runSoak(cfg soakConfig) error {
	if cfg.schools < 2 {
		return fmt.Errorf("-soak-schools: at least 2")
	}
	dir, err := os.MkdirTemp("", "schoolgate-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if cfg.out == "" {
		if cfg.out, err = os.MkdirTemp("", "schoolgate-soak-result-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	s := &soakRun{cfg: cfg, dir: dir, samples: map[string][]soakSample{}}
	// The commit built, read now: the tree may change during a long run.
	s.commit = "?"
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		s.commit = strings.TrimSpace(string(out))
	}
	soakProgress("building Caddy")
	if s.caddyBin, err = buildCaddy(dir, ""); err != nil {
		return err
	}
	stopUp, err := s.startUpstream()
	defer stopUp()
	if err != nil {
		return err
	}
	stopPG, err := s.openRegistry()
	defer stopPG()
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range s.instances {
			c.stop()
		}
	}()
	for _, name := range []string{"a", "b"} {
		if err := s.startInstance(name); err != nil {
			return err
		}
	}
	return s.soak()
}

// startUpstream starts the bench's legacy server with a small catalog
// (each school imports it once it is built: the MCP search has courses).
func (s *soakRun) startUpstream() (stop func(), err error) {
	stop = func() {}
	self, err := os.Executable()
	if err != nil {
		return stop, err
	}
	addr, err := freeAddr()
	if err != nil {
		return stop, err
	}
	up := exec.Command(self, "-serve", "upstream", "-addr", addr, "-courses", "200")
	up.Stderr = os.Stderr
	if err := up.Start(); err != nil {
		return stop, err
	}
	stop = func() { _ = up.Process.Kill(); _ = up.Wait() }
	s.upstream = "http://" + addr
	raw, _ := json.Marshal([]map[string]any{{"name": "Bench Agent", "client_id": benchClientID,
		"redirect_uris": []string{benchRedirect}, "audience": "member", "scopes": strings.Fields(benchScope)}})
	s.vendorsJSON = string(raw)
	return stop, waitUp(s.upstream+"/", 200)
}

// openRegistry starts a durable PostgreSQL, opens a registry in a
// database of it and writes the schools' records, 16 at a time; the
// bench keeps its own connection for pg_stat_activity.
func (s *soakRun) openRegistry() (stop func(), err error) {
	stop = func() {}
	if _, err := pgcluster.BinDir(); err != nil {
		return stop, fmt.Errorf("the soak needs PostgreSQL's server binaries (apt-get install postgresql): %v", err)
	}
	if s.port, err = freePort(); err != nil {
		return stop, err
	}
	c, err := pgcluster.Start(pgcluster.Options{Durable: true})
	if err != nil {
		return stop, err
	}
	var closers []func()
	stop = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
		_ = c.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if s.dsn, err = c.CreateDatabase(ctx, "soak"); err != nil {
		return stop, err
	}
	pool, err := pgstore.Connect(ctx, s.dsn)
	if err != nil {
		return stop, err
	}
	closers = append(closers, pool.Close)
	reg, err := pgstore.OpenRegistry(ctx, pool, nil)
	if err != nil {
		return stop, err
	}
	closers = append(closers, func() { _ = reg.Close() })
	s.reg = reg
	if s.pg, err = pgx.Connect(ctx, s.dsn); err != nil {
		return stop, err
	}
	closers = append(closers, func() { _ = s.pg.Close(context.Background()) })
	soakProgress("writing %d records", s.cfg.schools)
	began := time.Now()
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer wcancel()
	err = forEach(wctx, s.cfg.schools, 16, func(ctx context.Context, i int) error {
		_, err := reg.Put(ctx, s.record(schoolName(i), nil, ""))
		return err
	})
	soakProgress("%d records written in %.1f s", s.cfg.schools, time.Since(began).Seconds())
	return stop, err
}

func (s *soakRun) host(name string) string   { return schoolHost(name, s.port) }
func (s *soakRun) issuer(name string) string { return schoolIssuer(name, s.port) }

// record is a school's registry record: the bench's legacy server and
// its catalog, the bench's vendor client, rate limits off (one load
// generator on one address stands for many clients); loginURL, when
// set, is the option the writer changes.
func (s *soakRun) record(name string, hosts []string, loginURL string) registry.Record {
	cfg := map[string]any{"upstream": s.upstream, "catalog": s.upstream + "/catalog.json", "catalog_refresh": "1h",
		"rate_limits": map[string]bool{"off": true}, "vendors": json.RawMessage(s.vendorsJSON)}
	if loginURL != "" {
		cfg["login_url"] = loginURL
	}
	raw, _ := json.Marshal(cfg)
	return registry.Record{Issuer: s.issuer(name), Hosts: hosts, Config: raw}
}

// startInstance starts a platform instance on the registry, its
// connections named for pg_stat_activity, and waits for the first
// school. Instance a listens on the schools' port.
func (s *soakRun) startInstance(name string) error {
	port := s.port
	if name != "a" {
		var err error
		if port, err = freePort(); err != nil {
			return err
		}
	}
	admin, err := freeAddr()
	if err != nil {
		return err
	}
	dsn := s.dsn + " application_name=" + soakAppName(name)
	caddyfile := fmt.Sprintf(`{
	admin %s
	persist_config off
	storage file_system %s
}

http://:%d {
	school_platform {
		registry postgres %q {
			key_secret bench-key-secret
		}
		max_active %d
	}
}
`, admin, filepath.Join(s.dir, "caddy-storage-"+name), port, dsn, s.cfg.maxActive)
	c, err := launchCaddy(s.caddyBin, s.dir, name, port, admin, caddyfile)
	if err != nil {
		return err
	}
	s.instances = append(s.instances, c)
	soakProgress("instance %s started (pid %d, port %d)", name, c.pid(), port)
	first := schoolName(0)
	return c.waitFor(s.host(first), c.began, time.Minute, func(status int, issuer string) bool {
		return status == http.StatusOK && issuer == s.issuer(first)
	})
}

// soak runs the traffic for the duration, sampling every interval, then
// checks the tokens and writes the results.
func (s *soakRun) soak() error {
	t := newSoakTraffic(s)
	if err := t.prepare(); err != nil {
		return err
	}
	s.loadBefore = loadAverage()
	s.began = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.duration)
	defer cancel()
	var wg sync.WaitGroup
	t.start(ctx, &wg)
	soakProgress("traffic for %s, a sample every %s", s.cfg.duration, s.cfg.every)
	s.sampleAll(0)
	tick := time.NewTicker(s.cfg.every)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			s.sampleAll(time.Since(s.began))
			if last := s.samples["a"][len(s.samples["a"])-1]; true {
				soakProgress("%s: a: RSS %d MB, %d goroutines, %d files, %d PG; %s", last.At.Round(time.Second),
					last.RSS>>20, last.Goroutines, last.Files, last.PGConns, t.tally.brief())
			}
		}
	}
	tick.Stop()
	wg.Wait()
	// The last reading, once the traffic has stopped being counted (a
	// request in flight is cut off; the instances are as the traffic left
	// them).
	if last := s.samples["a"]; len(last) > 0 && time.Since(s.began)-last[len(last)-1].At > s.cfg.every/2 {
		s.sampleAll(time.Since(s.began))
	}
	s.loadAfter = loadAverage()
	soakProgress("checking a sample of the tokens issued")
	check := t.checkTokens()
	fair := s.fairShareRefusals()
	return s.report(t.tally, check, fair)
}

// sampleAll reads every instance.
func (s *soakRun) sampleAll(at time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pg, err := pgConnections(ctx, s.pg, "soak")
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: pg_stat_activity:", err)
	}
	for _, c := range s.instances {
		s.samples[c.name] = append(s.samples[c.name], c.sample(at, pg))
	}
}

// fairShareRefusals is each instance's count of fair-share refusals
// (schoolgate_requests_refused_total{cause="fair_share"}), -1 where it
// cannot be read.
func (s *soakRun) fairShareRefusals() map[string]int {
	out := map[string]int{}
	for _, c := range s.instances {
		out[c.name] = -1
		if text, err := c.metrics(); err == nil {
			if v, ok := promValue(text, "schoolgate_requests_refused_total", map[string]string{"cause": "fair_share"}); ok {
				out[c.name] = int(v)
			} else {
				out[c.name] = 0
			}
		}
	}
	return out
}

func soakProgress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s soak: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
