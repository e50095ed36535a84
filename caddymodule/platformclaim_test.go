package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/adminapi"
	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/storepool"
)

// newTestPlatforms starts the platforms of one config, one per registry
// dir root (each on a Memory registry whose schools keep their bbolt files
// under its root, as newTestPlatform's), ranked as the App ranks them:
// the first returned is the first by key. before runs before the App's
// Start.
func newTestPlatforms(t *testing.T, n int, before ...func([]*testPlatform)) []*testPlatform {
	t.Helper()
	ctx, err := caddy.ProvisionContext(&caddy.Config{AppsRaw: caddy.ModuleMap{appName: json.RawMessage(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ctx.App(appName)
	if err != nil {
		t.Fatal(err)
	}
	app := m.(*App)
	upstream := &testUpstream{waits: map[string]chan struct{}{}, hits: map[string]int{}, held: map[string]int{}}
	byPlatform := map[*platform]*testPlatform{}
	for range n {
		root := t.TempDir()
		h := &Platform{Registry: PlatformRegistry{Dir: root}, MaxActive: 10}
		if err := h.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		tp := &testPlatform{platform: h.plat, h: h, reg: registry.NewMemory(validateDirRecord), root: root, upstream: upstream}
		tp.flaky = &flakyRegistry{Memory: tp.reg}
		tp.open = func(context.Context) (*openedRegistry, error) {
			return &openedRegistry{Registry: tp.flaky, place: placeInDir(tp.dataDir), release: func() error { return nil }}, nil
		}
		tp.platform.upstream = upstream.handler
		byPlatform[h.plat] = tp
		t.Cleanup(func() { tp.end(t) })
	}
	var tps []*testPlatform
	for _, p := range app.platformsNow() {
		tps = append(tps, byPlatform[p])
	}
	for _, fn := range before {
		fn(tps)
	}
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	return tps
}

// failure is why a platform's school of issuer is failed, "" if it is not.
func (tp *testPlatform) failure(issuer string) string {
	if f := tp.school(issuer).Failed(); f != nil {
		return f.failure.Load().Error()
	}
	return ""
}

// Two platforms of a config with a record of one issuer: the first by
// key serves it; the other's record is failed from the registries' first
// read on, with a reason naming both registries, builds nothing and
// answers 503; the admin API lists it failed, the health check counts it,
// and the admin operations find the first's school. When the first's
// record goes (removed or disabled) the other's serves, and when it comes
// back the other's is let go of (its store closed) and fails again.
func TestPlatformsClaimingOneIssuer(t *testing.T) {
	const issuer = "https://twice.example"
	tps := newTestPlatforms(t, 2, func(tps []*testPlatform) {
		tps[0].put(t, issuer, nil, "")
		tps[1].put(t, issuer, []string{"alias.twice.example"}, "")
		tps[1].put(t, "https://only-second.example", nil, "")
	})
	first, second := tps[0], tps[1]
	runningAs(t, first.app)
	discovery := "https://twice.example" + discoveryPath

	if got := issuerOf(first.do(t, discovery)); got != issuer {
		t.Fatalf("the first platform's school: %q", got)
	}
	reason := second.failure(issuer)
	for _, want := range []string{first.cfg.name(), second.cfg.name(), "remove one of the two records"} {
		if !strings.Contains(reason, want) {
			t.Errorf("the second record's reason %q does not say %q", reason, want)
		}
	}
	for _, url := range []string{discovery, "https://alias.twice.example/courses"} {
		if rec := second.do(t, url); rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), "registry") {
			t.Errorf("%s at the second platform: %d %s, want a 503 that does not describe the config", url, rec.Code, rec.Body)
		}
	}
	if storeOpen(second.dataFile(issuer)) {
		t.Error("the second record of the issuer was built")
	}
	if got := issuerOf(second.do(t, "https://only-second.example"+discoveryPath)); got != "https://only-second.example" {
		t.Errorf("the second platform's other school: %q", got)
	}

	rec := httptest.NewRecorder()
	if err := handleSchools(rec, httptest.NewRequest(http.MethodGet, "/schoolgate/schools", nil)); err != nil {
		t.Fatal(err)
	}
	var page adminapi.SchoolsPage
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, v := range page.Schools {
		if v.Issuer == issuer {
			states[v.Platform] = v.State + " " + v.Reason
		}
	}
	if !strings.HasPrefix(states[first.cfg.describe()], "active") || !strings.HasPrefix(states[second.cfg.describe()], "failed issuer: "+issuer) {
		t.Errorf("/schoolgate/schools: %v", states)
	}
	rec = httptest.NewRecorder()
	if err := handleHealth(rec, httptest.NewRequest(http.MethodGet, "/schoolgate/health", nil)); err != nil {
		t.Fatal(err)
	}
	var health struct {
		Platforms []platformSummary `json:"platforms"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &health); err != nil || len(health.Platforms) != 2 ||
		health.Platforms[0].Failed != 0 || health.Platforms[1].Failed != 1 {
		t.Errorf("health: %d %s", rec.Code, rec.Body)
	}
	if s, release, err := siteOf(httptest.NewRecorder(), issuer); err != nil {
		t.Errorf("the admin API's school of the issuer: %v", err)
	} else {
		if s.gateway.dataPath() != first.dataFile(issuer) {
			t.Errorf("the admin API's school of the issuer keeps its data in %s, not the first platform's", s.gateway.dataPath())
		}
		release()
	}

	// The first's record disabled, then removed: the second's serves.
	for _, step := range []func(){
		func() {
			r := first.reg
			if _, err := r.Put(t.Context(), registry.Record{Issuer: issuer, Disabled: true, Config: json.RawMessage(`{"upstream":"http://127.0.0.1:9"}`)}); err != nil {
				t.Fatal(err)
			}
		},
		func() {
			if err := first.reg.Remove(t.Context(), issuer); err != nil {
				t.Fatal(err)
			}
		},
	} {
		step()
		if got := issuerOf(second.do(t, discovery)); got != issuer || second.failure(issuer) != "" {
			t.Fatalf("the second platform's school once the first's record is gone: %q, %s", got, second.failure(issuer))
		}
		if !storeOpen(second.dataFile(issuer)) {
			t.Error("the second platform's school does not keep its data in its registry")
		}
	}

	// Back in the first: the second's built school is let go of.
	first.put(t, issuer, nil, "")
	if storeOpen(second.dataFile(issuer)) {
		t.Error("the second platform's school still holds its store")
	}
	if !strings.Contains(second.failure(issuer), first.cfg.name()) {
		t.Errorf("the second record once the first is back: %s", second.school(issuer).state())
	}
	if got := issuerOf(first.do(t, discovery)); got != issuer {
		t.Errorf("the first platform's school once back: %q", got)
	}
}

// The rank, not the order of reading, decides: a first platform whose
// registry could not be read when the config started, read later, takes
// the issuer from the second, which served it meanwhile.
func TestPlatformsClaimAfterAFailedRead(t *testing.T) {
	const issuer = "https://late.example"
	tps := newTestPlatforms(t, 2, func(tps []*testPlatform) {
		tps[0].put(t, issuer, nil, "")
		tps[1].put(t, issuer, nil, "")
		tps[0].flaky.down.Store(true)
	})
	first, second := tps[0], tps[1]
	if got := issuerOf(second.do(t, "https://late.example"+discoveryPath)); got != issuer {
		t.Fatalf("the second platform while the first's registry is down: %q", got)
	}
	first.flaky.down.Store(false)
	if err := first.watch.Retry(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(second.failure(issuer), first.cfg.name()) || storeOpen(second.dataFile(issuer)) {
		t.Errorf("the second record once the first registry is read: %s", second.school(issuer).state())
	}
	if got := issuerOf(first.do(t, "https://late.example"+discoveryPath)); got != issuer {
		t.Errorf("the first platform's school: %q", got)
	}
}

// Two records of two platforms naming one data directory are two schools
// in one file: the second built fails, naming both and their registries.
func TestPlatformsShareNoDataFile(t *testing.T) {
	data := strconv.Quote(t.TempDir())
	tps := newTestPlatforms(t, 2, func(tps []*testPlatform) {
		tps[0].put(t, "https://a.example", nil, `,"data":`+data)
		tps[1].put(t, "https://b.example", nil, `,"data":`+data)
	})
	if got := issuerOf(tps[0].do(t, "https://a.example"+discoveryPath)); got != "https://a.example" {
		t.Fatalf("a: %q", got)
	}
	if rec := tps[1].do(t, "https://b.example"+discoveryPath); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("b on a's data directory: %d %s", rec.Code, rec.Body)
	}
	reason := tps[1].failure("https://b.example")
	for _, want := range []string{"https://a.example", tps[0].cfg.name(), tps[1].cfg.name()} {
		if !strings.Contains(reason, want) {
			t.Errorf("the reason %q does not say %q", reason, want)
		}
	}
}

// One registry written two ways is one platform: a dir through a symbolic
// link or with a trailing slash, a database by DSNs in another order, with
// other credentials or pool settings. Settings that differ are refused at
// provisioning, naming both spellings.
func TestOneRegistryTwoSpellings(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "schools")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	pg := func(dsn, secret string) PlatformRegistry {
		return PlatformRegistry{Postgres: &PostgresStore{DSN: dsn, KeySecret: secret}}
	}
	const dsn = "host=db.example port=5432 dbname=platform user=gate password=a"
	tests := []struct {
		name    string
		a, b    PlatformRegistry
		maxB    int
		wantErr string // "": one platform
		two     bool   // two platforms
	}{
		{name: "a trailing slash", a: PlatformRegistry{Dir: dir}, b: PlatformRegistry{Dir: dir + "/"}},
		{name: "a symbolic link", a: PlatformRegistry{Dir: dir}, b: PlatformRegistry{Dir: link}},
		{name: "a link to a directory not made yet", a: PlatformRegistry{Dir: filepath.Join(dir, "new")}, b: PlatformRegistry{Dir: filepath.Join(link, "new")}},
		{name: "a relative path", a: PlatformRegistry{Dir: "rel"}, b: PlatformRegistry{Dir: "./x/../rel"}},
		{name: "a DSN in another order", a: pg(dsn, "k"), b: pg("password=b user=other dbname=platform host=db.example pool_max_conns=4", "k")},
		{name: "a DSN as a URL", a: pg(dsn, "k"), b: pg("postgres://gate:a@db.example/platform?sslmode=disable", "k")},
		{name: "two directories", a: PlatformRegistry{Dir: dir}, b: PlatformRegistry{Dir: root}, two: true},
		{name: "two databases", a: pg(dsn, "k"), b: pg("host=db.example dbname=other", "k"), two: true},
		{name: "two max_active", a: PlatformRegistry{Dir: dir}, b: PlatformRegistry{Dir: link}, maxB: 5,
			wantErr: "max_active: registry dir " + dir + " (also written dir " + link + ") is named by two school_platform handlers with max_active 10 and 5"},
		{name: "two key secrets", a: pg(dsn, "k"), b: pg("postgres://gate@db.example/platform", "other"),
			wantErr: "registry postgres: the database db.example:5432/platform is named by two school_platform handlers with two key_secret values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, err := caddy.ProvisionContext(&caddy.Config{AppsRaw: caddy.ModuleMap{appName: json.RawMessage(`{}`)}})
			if err != nil {
				t.Fatal(err)
			}
			a := &Platform{Registry: tt.a, MaxActive: 10}
			if err := a.Provision(ctx); err != nil {
				t.Fatal(err)
			}
			b := &Platform{Registry: tt.b, MaxActive: cmpOr(tt.maxB, 10)}
			err = b.Provision(ctx)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("%v, want %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case tt.two != (a.plat != b.plat):
				t.Errorf("%s and %s: one platform %v, want %v", tt.a.key(), tt.b.key(), a.plat == b.plat, !tt.two)
			}
		})
	}
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// The platforms are ranked by key whatever the order they are provisioned
// in: the rank decides which serves an issuer two have a record of.
func TestPlatformsRankedByKey(t *testing.T) {
	root := t.TempDir()
	dirs := []string{"c", "a", "b"}
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}} {
		ctx, err := caddy.ProvisionContext(&caddy.Config{AppsRaw: caddy.ModuleMap{appName: json.RawMessage(`{}`)}})
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range order {
			h := &Platform{Registry: PlatformRegistry{Dir: filepath.Join(root, dirs[i])}}
			if err := h.Provision(ctx); err != nil {
				t.Fatal(err)
			}
		}
		app, _ := ctx.App(appName)
		var got []string
		for _, p := range app.(*App).platformsNow() {
			got = append(got, filepath.Base(p.cfg.Dir))
		}
		if fmt.Sprint(got) != "[a b c]" {
			t.Errorf("provisioned in the order %v: ranked %v", order, got)
		}
	}
}

// Another process on the same registry dir is not seen by the config;
// what keeps a school from being served by both from one file is bbolt's
// lock on it: while the other holds the file, the school fails here
// (503, "locked by another process") and is built again in the
// background, which serves it once the other let go of it.
func TestPlatformSchoolHeldByAnotherProcess(t *testing.T) {
	t.Cleanup(storepool.CheckLocksOnce()) // a lock is checked once rather than waited for
	const issuer = "https://shared.example"
	tp := newTestPlatform(t, 10)
	tp.put(t, issuer, nil, "")
	if err := os.MkdirAll(tp.dataDir(issuer), 0o700); err != nil {
		t.Fatal(err)
	}
	other, err := boltstore.Open(tp.dataFile(issuer), time.Second) // as the other process holds it
	if err != nil {
		t.Fatal(err)
	}
	if rec := tp.do(t, "https://shared.example"+discoveryPath); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("a school whose file another process holds: %d %s", rec.Code, rec.Body)
	}
	if reason := tp.failure(issuer); !strings.Contains(reason, "locked by another process") {
		t.Errorf("the reason: %q", reason)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if e := tp.school(issuer); !e.Rebuild(e.Failed()) {
		t.Fatal("the school was not built once the other process let go of its file")
	}
	if got := issuerOf(tp.do(t, "https://shared.example"+discoveryPath)); got != issuer {
		t.Errorf("once built: %q", got)
	}
}
