package e2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

const mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
	`"capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`

// outageTally sorts the answers of a load through a database outage.
type outageTally struct {
	mu       sync.Mutex
	ok       map[string]int
	degraded map[string]int // 503 with Retry-After
	bad      []string
}

func (o *outageTally) add(kind string, r reply, okStatus ...int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case r.err != nil:
		o.bad = append(o.bad, kind+": "+r.String())
	case r.status == http.StatusServiceUnavailable && r.header.Get("Retry-After") != "":
		o.degraded[kind]++
	case len(okStatus) > 0 && contains(okStatus, r.status):
		o.ok[kind]++
	default:
		o.bad = append(o.bad, kind+": "+r.String())
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestDatabaseOutage stops the database under a mixed load: every answer
// is a success or a 503 with Retry-After, never a 500, a reset or a
// refusal of a good token; once the database is back the same Caddy, not
// restarted, serves again and the tokens issued before still work.
func TestDatabaseOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("stops the database under load")
	}
	sch := startSchool(t)
	dsn := pgcluster.Database(t)
	cluster := pgcluster.Shared(t)
	port := freePort(t)
	redirect := "https://load-app.example/callback"
	extra := vendorBlock("Load App", "load-app", redirect, "member", loadScope) + "\t\trate_limit off\n"
	gw := startGateway(t, t.TempDir(), pgSiteBlock(port, port, sch.URL, dsn, extra))
	o := signInForLoad(t, gw.URL, "load-app", redirect, loadScope, "student@demo.school", "student")
	ctx := t.Context()
	code, verifier, r := o.authorize(ctx)
	if code == "" {
		t.Fatalf("authorize: %v", r)
	}
	first, ok := o.exchange(ctx, code, verifier).pair()
	if !ok {
		t.Fatal("no first token pair")
	}
	t.Cleanup(func() { _ = cluster.Resume() })

	tally := &outageTally{ok: map[string]int{}, degraded: map[string]int{}}
	var stop atomic.Bool
	var refreshMu sync.Mutex
	latest := first
	work := map[string]func(){
		"protected": func() {
			tally.add("protected", o.request(ctx, http.MethodPost, "/account/graphql", first.Access, viewerQuery, nil), http.StatusOK)
		},
		"introspect": func() {
			r := o.introspect(ctx, first.Access)
			if r.status == http.StatusOK && !strings.Contains(string(r.body), `"active":true`) {
				r.err = fmt.Errorf("a valid token introspected inactive: %s", r.body)
			}
			tally.add("introspect", r, http.StatusOK)
		},
		"mcp": func() {
			tally.add("mcp", o.request(ctx, http.MethodPost, "/mcp", first.Access, mcpInitialize,
				map[string]string{"Accept": "application/json, text/event-stream"}), http.StatusOK)
		},
		"authorize": func() {
			_, _, r := o.authorize(ctx)
			tally.add("authorize", r, http.StatusFound)
		},
		"refresh": func() {
			// One chain, as one client: a 503 is retried with the same
			// token, which the grace window accepts even if the lost
			// answer's rotation was committed.
			refreshMu.Lock()
			defer refreshMu.Unlock()
			r := o.refresh(ctx, latest.Refresh)
			if p, ok := r.pair(); ok {
				latest = p
			}
			tally.add("refresh", r, http.StatusOK)
		},
	}
	health := func() int {
		status, _, _ := get(t, "http://"+gw.AdminAddr+"/schoolgate/health")
		return status
	}
	var wg sync.WaitGroup
	for _, fn := range work {
		wg.Go(func() {
			for !stop.Load() {
				fn()
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	// A failure below ends the load before the cluster is resumed (cleanups
	// run last first), so no worker outlives the test.
	t.Cleanup(func() {
		stop.Store(true)
		wg.Wait()
	})
	time.Sleep(300 * time.Millisecond)
	if err := cluster.Pause(); err != nil {
		t.Fatal(err)
	}
	// Longer than the token cache's 5 s, so that cached validations expire
	// and the protected resources meet the outage too.
	time.Sleep(6 * time.Second)
	if st := health(); st != http.StatusServiceUnavailable {
		t.Errorf("health with the database down: %d", st)
	}
	if err := cluster.Resume(); err != nil {
		t.Fatal(err)
	}
	// Back without a restart: the pool reconnects by itself.
	deadline := time.Now().Add(15 * time.Second)
	for o.request(ctx, http.MethodPost, "/account/graphql", first.Access, viewerQuery, nil).status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the gateway did not recover within 15 s of the database's return")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if st := health(); st != http.StatusOK {
		t.Errorf("health after the database's return: %d", st)
	}
	for _, b := range tally.bad {
		t.Errorf("answer during the outage: %s", b)
	}
	for kind := range work {
		if tally.degraded[kind] == 0 {
			t.Errorf("%s never met the outage (%d successes): the load missed it", kind, tally.ok[kind])
		}
	}
	t.Logf("successes %v, 503s %v", tally.ok, tally.degraded)
	if r := o.refresh(ctx, latest.Refresh); r.status != http.StatusOK {
		t.Errorf("the refresh chain after the outage: %v", r)
	}
}

// TestReloadToUnreachableDatabase: a reload to a site whose database
// cannot be reached fails, naming the host and not the password, and the
// running configuration keeps serving.
func TestReloadToUnreachableDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the connection window")
	}
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	gw := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "site"), ""))
	nowhere := filepath.Join(dir, "no-server-here")
	dsn := fmt.Sprintf("host=%s user=school password=hunter2 dbname=school", nowhere)
	gw.write(pgSiteBlock(port, port, sch.URL, dsn, ""))
	out, err := exec.Command(caddyBin, "reload", "--config", gw.config, "--adapter", "caddyfile",
		"--address", gw.AdminAddr).CombinedOutput()
	if err == nil {
		t.Fatalf("a reload to an unreachable database succeeded:\n%s", out)
	}
	if !strings.Contains(string(out), nowhere) || strings.Contains(string(out), "hunter2") {
		t.Errorf("the reload's error should name the host and hide the password:\n%s", out)
	}
	if strings.Contains(gw.proc.out.String(), "hunter2") {
		t.Error("Caddy's log shows the password")
	}
	if status, _, _ := get(t, gw.URL+"/.well-known/oauth-authorization-server"); status != http.StatusOK {
		t.Errorf("the running configuration stopped serving: %d", status)
	}
}

// TestStartBeforeTheDatabase: a gateway started while its database is
// down (containers started together, the database last) answers 503 for
// its schools, and serves them once the database is up, with no reload.
// Only the first school waits out the connection window: three schools
// on one database that is down start in seconds more, not three windows.
func TestStartBeforeTheDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the connection window")
	}
	sch := startSchool(t)
	dsn := pgcluster.Database(t)
	cluster := pgcluster.Shared(t)
	if err := cluster.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Resume() })
	var blocks []string
	for range 3 {
		port := freePort(t)
		blocks = append(blocks, pgSiteBlock(port, port, sch.URL, dsn, ""))
	}
	origins := launchGateway(t, t.TempDir(), blocks...).origins
	const discovery = "/.well-known/oauth-authorization-server"
	for _, origin := range origins {
		waitFor(t, origin+" to answer 503 without its database", func() bool { return status(origin+discovery) == 503 })
	}
	if err := cluster.Resume(); err != nil {
		t.Fatal(err)
	}
	for _, origin := range origins {
		waitFor(t, origin+" to serve once its database is up", func() bool { return status(origin+discovery) == 200 })
	}
	assertMCPServes(t, origins[2])
}
