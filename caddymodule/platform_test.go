package caddymodule

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/storepool"
)

// testPlatform is a platform started as the App's Start starts one, on a
// Memory registry whose schools keep their bbolt files under root, with
// legacy servers that answer "legacy <issuer>" and can be made to wait.
type testPlatform struct {
	*platform
	h   *Platform
	reg *registry.Memory
	// flaky is the registry as the platform sees it: reg, until it is
	// made to fail.
	flaky    *flakyRegistry
	root     string
	upstream *testUpstream
	ended    sync.Once
}

// flakyRegistry is a registry that can be made unreachable.
type flakyRegistry struct {
	*registry.Memory
	down atomic.Bool
}

var errRegistryDown = errors.New("registry: connection refused")

func (f *flakyRegistry) List(ctx context.Context) ([]registry.Record, error) {
	if f.down.Load() {
		return nil, errRegistryDown
	}
	return f.Memory.List(ctx)
}

func (f *flakyRegistry) Get(ctx context.Context, issuer string) (registry.Record, error) {
	if f.down.Load() {
		return registry.Record{}, errRegistryDown
	}
	return f.Memory.Get(ctx, issuer)
}

// newTestPlatform starts a platform; before runs before the App's Start.
func newTestPlatform(t testing.TB, maxActive int, before ...func(*testPlatform)) *testPlatform {
	t.Helper()
	return newTestPlatformIn(t, t.TempDir(), maxActive, before...)
}

// newTestPlatformIn starts a platform of the registry dir root.
func newTestPlatformIn(t testing.TB, root string, maxActive int, before ...func(*testPlatform)) *testPlatform {
	t.Helper()
	ctx, err := caddy.ProvisionContext(&caddy.Config{AppsRaw: caddy.ModuleMap{appName: json.RawMessage(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	app, err := ctx.App(appName)
	if err != nil {
		t.Fatal(err)
	}
	h := &Platform{Registry: PlatformRegistry{Dir: root}, MaxActive: maxActive}
	if err := h.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	tp := &testPlatform{platform: h.plat, h: h, reg: registry.NewMemory(validateDirRecord), root: root,
		upstream: &testUpstream{waits: map[string]chan struct{}{}, hits: map[string]int{}, held: map[string]int{}}}
	tp.flaky = &flakyRegistry{Memory: tp.reg}
	tp.open = func(context.Context) (*openedRegistry, error) {
		return &openedRegistry{Registry: tp.flaky, place: placeInDir(tp.dataDir), release: func() error { return nil }}, nil
	}
	tp.platform.upstream = tp.upstream.handler
	for _, fn := range before {
		fn(tp)
	}
	if err := app.(*App).Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.end(t) })
	return tp
}

// end ends the platform as its config's end does, once.
func (tp *testPlatform) end(t testing.TB) {
	tp.ended.Do(func() {
		if err := tp.h.Cleanup(); err != nil {
			t.Error(err)
		}
	})
}

// dataDir is where the registry keeps a school's bbolt file.
func (tp *testPlatform) dataDir(issuer string) string {
	return filepath.Join(tp.root, "schools", hostFileName(issuer))
}

// dataFile is a school's bbolt file.
func (tp *testPlatform) dataFile(issuer string) string {
	return filepath.Join(tp.dataDir(issuer), "school.db")
}

// put writes a school's record: its issuer, its aliases and extra
// options beside its upstream.
func (tp *testPlatform) put(t testing.TB, issuer string, hosts []string, extra string) registry.Record {
	t.Helper()
	cfg := `{"upstream":"http://127.0.0.1:9"` + extra + `}`
	rec, err := tp.reg.Put(context.Background(), registry.Record{Issuer: issuer, Hosts: hosts, Config: json.RawMessage(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// school is the platform's school of an issuer now.
func (tp *testPlatform) school(issuer string) *platformSchool {
	return tp.tables.Load().School(issuer)
}

// do serves one request for url (http or https, which the request is
// made with) and returns the answer.
// serve serves r as the handler does, without Caddy's error handling.
func (tp *testPlatform) serve(w http.ResponseWriter, r *http.Request) error {
	return tp.tables.Serve(w, r, trustedProxy(r))
}

func (tp *testPlatform) do(t testing.TB, url string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	if err := tp.serve(rec, platformRequest(url)); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return rec
}

func platformRequest(url string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, url, nil)
	if strings.HasPrefix(url, "https://") {
		r.TLS = &tls.ConnectionState{}
	}
	return r
}

// issuerOf reads the issuer of a discovery answer, "" if it is none.
func issuerOf(rec *httptest.ResponseRecorder) string {
	var doc struct {
		Issuer string `json:"issuer"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
		return ""
	}
	return doc.Issuer
}

const discoveryPath = "/.well-known/oauth-authorization-server"

// testUpstream stands for the schools' legacy servers.
type testUpstream struct {
	mu   sync.Mutex
	hits map[string]int
	// held counts the holds on each issuer's proxy not released.
	held  map[string]int
	waits map[string]chan struct{}
	// entered receives the issuer of a request that waits.
	entered chan string
}

func (u *testUpstream) handler(g *Gateway) (caddyhttp.Handler, func(), error) {
	issuer := g.Issuer
	u.mu.Lock()
	u.held[issuer]++
	u.mu.Unlock()
	var once sync.Once
	release := func() {
		once.Do(func() {
			u.mu.Lock()
			u.held[issuer]--
			u.mu.Unlock()
		})
	}
	return caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		u.mu.Lock()
		u.hits[issuer]++
		wait := u.waits[issuer]
		u.mu.Unlock()
		if wait != nil {
			u.entered <- issuer
			<-wait
		}
		_, err := io.WriteString(w, "legacy "+issuer)
		return err
	}), release, nil
}

// holds is how many holds on issuer's proxy are not released.
func (u *testUpstream) holds(issuer string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.held[issuer]
}

// hold makes the legacy server of issuer keep its requests until the
// returned function is called.
func (u *testUpstream) hold(issuer string) func() {
	ch := make(chan struct{})
	u.mu.Lock()
	u.waits[issuer] = ch
	if u.entered == nil {
		u.entered = make(chan string, 16)
	}
	u.mu.Unlock()
	return func() {
		u.mu.Lock()
		delete(u.waits, issuer)
		u.mu.Unlock()
		close(ch)
	}
}

// storeOpen reports whether a bbolt file is open in the process.
func storeOpen(path string) bool {
	n, ok := storepool.BoltHolders(path)
	return ok && n > 0
}

// siteHeld reports how many holders the site pool counts for a key.
func siteHeld(key string) int {
	n, _ := sites.References(key)
	return n
}

// A request finds its school by its host, in any spelling of it: upper
// case, a trailing dot, the scheme's default port; aliases find the
// school of their record. A host no enabled school answers on, a disabled
// school's and an http school's over TLS are answered a plain 404 that
// says nothing of any school.
func TestPlatformRouting(t *testing.T) {
	tp := newTestPlatform(t, 10)
	tp.put(t, "https://a.example", []string{"www.a.example", "a.example:8443"}, "")
	tp.put(t, "https://b.example", nil, "")
	tp.put(t, "http://plain.example:8080", nil, "")
	off := tp.put(t, "https://off.example", nil, "")
	off.Disabled = true
	if _, err := tp.reg.Put(context.Background(), off); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ url, want string }{
		{"https://a.example", "https://a.example"},
		{"https://A.Example.", "https://a.example"},
		{"https://a.example:443", "https://a.example"},
		{"https://WWW.a.example", "https://a.example"},
		{"https://a.example:8443", "https://a.example"},
		{"https://b.example.:443", "https://b.example"},
		{"http://plain.example:8080", "http://plain.example:8080"},
		{"http://PLAIN.example.:8080", "http://plain.example:8080"},
		{"https://c.example", ""},
		{"https://off.example", ""},
		{"http://a.example", ""},
		{"https://plain.example:8080", ""},
		{"https://a.example:9443", ""},
	} {
		rec := tp.do(t, tt.url+discoveryPath)
		if tt.want != "" {
			if got := issuerOf(rec); got != tt.want {
				t.Errorf("%s: %d %s, want the discovery of %s", tt.url, rec.Code, rec.Body, tt.want)
			}
			continue
		}
		checkNoSchool(t, tt.url, rec)
	}
}

// checkNoSchool checks the answer to a host no school answers on: 404,
// plain text, nothing of a school (no issuer, no challenge, no CORS).
func checkNoSchool(t *testing.T, url string, rec *httptest.ResponseRecorder) {
	t.Helper()
	h := rec.Header()
	if rec.Code != http.StatusNotFound || h.Get("Content-Type") != "text/plain; charset=utf-8" ||
		h.Get("WWW-Authenticate") != "" || h.Get("Access-Control-Allow-Origin") != "" ||
		strings.Contains(rec.Body.String(), ".example") {
		t.Errorf("%s: %d %v %q, want a plain 404", url, rec.Code, h, rec.Body)
	}
}

// Every path of an unknown host is the same 404: documents, OAuth
// endpoints, /mcp, a protected resource with a token, a CORS preflight.
func TestPlatformUnknownHost(t *testing.T) {
	tp := newTestPlatform(t, 10)
	tp.put(t, "https://a.example", nil, "")
	for _, path := range []string{"/", "/llms.txt", "/openapi.json", "/auth.md", "/mcp", "/api/oauth/token",
		"/.well-known/oauth-protected-resource", "/account/graphql", "/admin/api/courses"} {
		r := platformRequest("https://unknown.example" + path)
		r.Header.Set("Authorization", "Bearer sgat_x")
		r.Header.Set("Origin", "https://app.example")
		rec := httptest.NewRecorder()
		if err := tp.serve(rec, r); err != nil {
			t.Fatal(err)
		}
		checkNoSchool(t, path, rec)
	}
	if tp.activeCount() != 0 {
		t.Errorf("%d schools built by requests to an unknown host", tp.activeCount())
	}
}

// A school is built by its first request, once however many arrive
// together: one state in the site pool, one store opened.
func TestPlatformActivatesOnce(t *testing.T) {
	tp := newTestPlatform(t, 10)
	tp.put(t, "https://a.example", nil, "")
	tp.put(t, "https://b.example", nil, "")
	if tp.activeCount() != 0 || storeOpen(tp.dataFile("https://a.example")) {
		t.Fatal("a school was built before its first request")
	}
	var wg sync.WaitGroup
	issuers := make(chan string, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			if err := tp.serve(rec, platformRequest("https://a.example"+discoveryPath)); err == nil {
				issuers <- issuerOf(rec)
			}
		}()
	}
	wg.Wait()
	close(issuers)
	for got := range issuers {
		if got != "https://a.example" {
			t.Errorf("a concurrent first request: %q", got)
		}
	}
	a := tp.school("https://a.example")
	if n := siteHeld(a.prepared().key); n != 1 || tp.activeCount() != 1 || !storeOpen(tp.dataFile("https://a.example")) {
		t.Errorf("the school is held %d times, %d active; want it built once", n, tp.activeCount())
	}
	if storeOpen(tp.dataFile("https://b.example")) || tp.school("https://b.example").state() != "idle" {
		t.Error("the other school was built")
	}
}

// Past max_active, the least recently used school without a request in
// flight is let go of: its store closed, its state released. It is built
// again by its next request.
func TestPlatformLetsGoOfLeastRecentlyUsed(t *testing.T) {
	tp := newTestPlatform(t, 2)
	for _, s := range []string{"a", "b", "c"} {
		tp.put(t, "https://"+s+".example", nil, "")
	}
	visit := func(s string) {
		t.Helper()
		if got := issuerOf(tp.do(t, "https://"+s+".example"+discoveryPath)); got != "https://"+s+".example" {
			t.Fatalf("%s: %q", s, got)
		}
	}
	states := func() string {
		var out []string
		for _, s := range []string{"a", "b", "c"} {
			e := tp.school("https://" + s + ".example")
			open := storeOpen(tp.dataFile(e.rec.Issuer))
			if open != e.IsActive() {
				t.Errorf("%s is %s with its store open %v", s, e.state(), open)
			}
			out = append(out, s+"="+e.state())
		}
		return strings.Join(out, " ")
	}
	visit("a")
	visit("b")
	visit("a") // b is now the least recently used
	visit("c")
	if got := states(); got != "a=active b=idle c=active" {
		t.Errorf("after a, b, a, c: %s", got)
	}
	visit("b")
	if got := states(); got != "a=idle b=active c=active" {
		t.Errorf("after b again: %s", got)
	}
}

// A school with a request in flight is never let go of, even past
// max_active: the request finishes on an open store. The school built
// meanwhile is the least recently used idle one when its own request
// leaves, and is let go of then.
func TestPlatformKeepsBusySchool(t *testing.T) {
	tp := newTestPlatform(t, 1)
	tp.put(t, "https://a.example", nil, "")
	tp.put(t, "https://b.example", nil, "")
	release := tp.upstream.hold("https://a.example")
	done := make(chan *httptest.ResponseRecorder)
	go func() {
		rec := httptest.NewRecorder()
		_ = tp.serve(rec, platformRequest("https://a.example/courses"))
		done <- rec
	}()
	<-tp.upstream.entered // a's request is in flight, at its legacy server
	if got := issuerOf(tp.do(t, "https://b.example"+discoveryPath)); got != "https://b.example" {
		t.Fatalf("b: %q", got)
	}
	a, b := tp.school("https://a.example"), tp.school("https://b.example")
	if !a.IsActive() || !storeOpen(tp.dataFile(a.rec.Issuer)) {
		t.Fatalf("a school with a request in flight was let go of: a %s", a.state())
	}
	if b.IsActive() || storeOpen(tp.dataFile(b.rec.Issuer)) || tp.activeCount() != 1 {
		t.Errorf("past max_active, the school left idle was kept: b %s, %d active", b.state(), tp.activeCount())
	}
	release()
	if rec := <-done; rec.Body.String() != "legacy https://a.example" {
		t.Fatalf("a's request: %d %s", rec.Code, rec.Body)
	}
	if !a.IsActive() || tp.activeCount() != 1 {
		t.Errorf("a, within max_active, was let go of: %s, %d active", a.state(), tp.activeCount())
	}
}

// A changed record rebuilds that school only, before it replaces the old
// one: a request in flight finishes on the old school, which is let go of
// after it; the other schools keep their state.
func TestPlatformChangeRebuildsOneSchool(t *testing.T) {
	tp := newTestPlatform(t, 10)
	tp.put(t, "https://a.example", nil, "")
	tp.put(t, "https://b.example", nil, "")
	for _, s := range []string{"a", "b"} {
		tp.do(t, "https://"+s+".example"+discoveryPath)
	}
	oldA, b := tp.school("https://a.example"), tp.school("https://b.example")
	oldSite, bSite := oldA.Active().Built().site, b.Active().Built().site
	release := tp.upstream.hold("https://a.example")
	done := make(chan *httptest.ResponseRecorder)
	go func() {
		rec := httptest.NewRecorder()
		_ = tp.serve(rec, platformRequest("https://a.example/courses"))
		done <- rec
	}()
	<-tp.upstream.entered
	tp.put(t, "https://a.example", nil, `,"code_ttl":"30s"`)
	newA := tp.school("https://a.example")
	if newA == oldA || !newA.IsActive() || newA.Active().Built().site == oldSite {
		t.Fatalf("the changed school was not built anew: %s", newA.state())
	}
	if b.Retired() || tp.school("https://b.example") != b || b.Active().Built().site != bSite {
		t.Error("the unchanged school was rebuilt")
	}
	if siteHeld(oldA.prepared().key) != 1 {
		t.Errorf("the old school is held %d times while its request is in flight", siteHeld(oldA.prepared().key))
	}
	if got := issuerOf(tp.do(t, "https://a.example"+discoveryPath)); got != "https://a.example" {
		t.Errorf("the changed school: %q", got)
	}
	release()
	if rec := <-done; rec.Body.String() != "legacy https://a.example" {
		t.Fatalf("the request in flight: %d %s", rec.Code, rec.Body)
	}
	if siteHeld(oldA.prepared().key) != 0 || tp.activeCount() != 2 {
		t.Errorf("the old school is held %d times after its last request, %d active", siteHeld(oldA.prepared().key), tp.activeCount())
	}
	if !storeOpen(tp.dataFile("https://a.example")) {
		t.Error("the new school's store was closed with the old one's")
	}
}

// A removed or disabled school answers 404 from then on, and is let go
// of; an added one routes at once. No reload is involved.
func TestPlatformRemoveAndDisable(t *testing.T) {
	tp := newTestPlatform(t, 10)
	tp.put(t, "https://a.example", []string{"www.a.example"}, "")
	rec := tp.put(t, "https://b.example", nil, "")
	for _, s := range []string{"a", "b"} {
		tp.do(t, "https://"+s+".example"+discoveryPath)
	}
	if err := tp.reg.Remove(context.Background(), "https://a.example"); err != nil {
		t.Fatal(err)
	}
	rec.Disabled = true
	if _, err := tp.reg.Put(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"https://a.example", "https://www.a.example", "https://b.example"} {
		checkNoSchool(t, url, tp.do(t, url+discoveryPath))
	}
	if storeOpen(tp.dataFile("https://a.example")) || storeOpen(tp.dataFile("https://b.example")) || tp.activeCount() != 0 {
		t.Errorf("removed and disabled schools are still built: %d active", tp.activeCount())
	}
	if got := tp.school("https://b.example").state(); got != "disabled" {
		t.Errorf("the disabled school is %s", got)
	}
	tp.put(t, "https://c.example", nil, "")
	if got := issuerOf(tp.do(t, "https://c.example"+discoveryPath)); got != "https://c.example" {
		t.Errorf("an added school: %q", got)
	}
	rec.Disabled = false
	if _, err := tp.reg.Put(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if got := issuerOf(tp.do(t, "https://b.example"+discoveryPath)); got != "https://b.example" {
		t.Errorf("a school enabled again: %q", got)
	}
}

// A school that cannot be built answers 503 with Retry-After and a reason
// without the operator's paths on what the gateway answers, passes the
// legacy site's public pages, and is built again in the background; the
// other schools serve throughout.
func TestPlatformFailureIsolation(t *testing.T) {
	tp := newTestPlatform(t, 10)
	broken := filepath.Join(tp.root, "broken")
	if err := os.MkdirAll(broken, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "school.db"), []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	tp.put(t, "https://good.example", nil, "")
	tp.put(t, "https://broken.example", nil, `,"data":`+strconv.Quote(broken))
	tp.put(t, "https://noapi.example", nil, `,"admin_openapi":`+strconv.Quote(filepath.Join(tp.root, "missing.json")))
	tp.put(t, "https://twin.example", nil, `,"data":`+strconv.Quote(tp.dataDir("https://good.example")))
	if got := issuerOf(tp.do(t, "https://good.example"+discoveryPath)); got != "https://good.example" {
		t.Fatalf("good: %q", got)
	}
	for _, tt := range []struct{ issuer, reason string }{
		{"https://broken.example", "its store could not be opened"},
		{"https://noapi.example", "its configuration could not be used"},
		{"https://twin.example", "its data directory is another school's"},
	} {
		rec := tp.do(t, tt.issuer+discoveryPath)
		var body map[string]string
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
			json.Unmarshal(rec.Body.Bytes(), &body) != nil || body["error"] != "temporarily_unavailable" ||
			!strings.Contains(body["error_description"], tt.reason) || strings.Contains(rec.Body.String(), tp.root) {
			t.Errorf("%s: %d %v %s, want 503 saying %q", tt.issuer, rec.Code, rec.Header(), rec.Body, tt.reason)
		}
		if tp.school(tt.issuer).state() != "failed" {
			t.Errorf("%s is %s", tt.issuer, tp.school(tt.issuer).state())
		}
		if got := issuerOf(tp.do(t, "https://good.example"+discoveryPath)); got != "https://good.example" {
			t.Errorf("good, beside %s: %q", tt.issuer, got)
		}
	}
	if rec := tp.do(t, "https://broken.example/courses"); rec.Body.String() != "legacy https://broken.example" {
		t.Errorf("a public page of a failed school: %d %s", rec.Code, rec.Body)
	}
	if rec := tp.do(t, "https://noapi.example/courses"); rec.Body.String() != "legacy https://noapi.example" {
		t.Errorf("a public page of a school whose admin OpenAPI file is missing: %d %s", rec.Code, rec.Body)
	}

	// Repaired, the school is built by its next rebuild (run here rather
	// than waited for) and serves.
	if err := os.Remove(filepath.Join(broken, "school.db")); err != nil {
		t.Fatal(err)
	}
	e := tp.school("https://broken.example")
	if !e.Rebuild(e.Failed()) {
		t.Fatal("the repaired school did not build")
	}
	if got := issuerOf(tp.do(t, "https://broken.example"+discoveryPath)); got != "https://broken.example" {
		t.Errorf("the repaired school: %q", got)
	}
}

// A record whose configuration does not read (a registry that kept it
// under rules since changed) fails alone: 503 on every path, there being
// no legacy server to hand a page to.
func TestPlatformUnreadableRecord(t *testing.T) {
	tp := newTestPlatform(t, 10)
	tp.put(t, "https://good.example", nil, "")
	// Written past the validator, as a registry read from older files.
	bad := registry.NewMemory(nil)
	rec, err := bad.Put(t.Context(), registry.Record{Issuer: "https://bad.example", Config: json.RawMessage(`{"upstream":"ftp://x"}`)})
	if err != nil {
		t.Fatal(err)
	}
	tp.watch.Lock()
	tp.watch.SetRecord(rec.Issuer, &rec)
	tp.watch.Unlock()
	for _, path := range []string{discoveryPath, "/courses"} {
		rec := tp.do(t, "https://bad.example"+path)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
			!strings.Contains(rec.Body.String(), "configuration could not be used") {
			t.Errorf("%s: %d %v %s", path, rec.Code, rec.Header(), rec.Body)
		}
	}
	if got := issuerOf(tp.do(t, "https://good.example"+discoveryPath)); got != "https://good.example" {
		t.Errorf("good: %q", got)
	}
}

// A registry that cannot be read at start leaves the platform answering
// 503 with Retry-After until it can; one that goes down later leaves the
// built schools serving, and the changes it announced meanwhile are read
// once it is back.
func TestPlatformRegistryDown(t *testing.T) {
	t.Run("at start", func(t *testing.T) {
		tp := newTestPlatform(t, 10, func(tp *testPlatform) {
			tp.put(t, "https://a.example", nil, "")
			tp.flaky.down.Store(true)
		})
		rec := tp.do(t, "https://a.example"+discoveryPath)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
			strings.Contains(rec.Body.String(), "connection refused") {
			t.Errorf("before the registry was read: %d %v %s", rec.Code, rec.Header(), rec.Body)
		}
		tp.flaky.down.Store(false)
		if err := tp.watch.Retry(); err != nil { // the background retry, run now
			t.Fatal(err)
		}
		if got := issuerOf(tp.do(t, "https://a.example"+discoveryPath)); got != "https://a.example" {
			t.Errorf("once the registry is read: %q", got)
		}
	})
	t.Run("later", func(t *testing.T) {
		tp := newTestPlatform(t, 10)
		tp.put(t, "https://a.example", nil, "")
		tp.do(t, "https://a.example"+discoveryPath)
		tp.flaky.down.Store(true)
		tp.put(t, "https://a.example", nil, `,"code_ttl":"30s"`) // announced, not readable
		tp.put(t, "https://b.example", nil, "")
		if tp.watch.Failure() == nil {
			t.Fatal("the failed read is not recorded")
		}
		if code, sum := platformHealth(t, tp); code != http.StatusServiceUnavailable || sum.RegistryError == "" || sum.NextTry == nil {
			t.Errorf("health while the registry cannot be read: %d %+v, want 503 with the registry's error", code, sum)
		}
		if got := issuerOf(tp.do(t, "https://a.example"+discoveryPath)); got != "https://a.example" {
			t.Errorf("a built school while the registry is down: %q", got)
		}
		checkNoSchool(t, "b", tp.do(t, "https://b.example"+discoveryPath))
		tp.flaky.down.Store(false)
		if err := tp.watch.Retry(); err != nil {
			t.Fatal(err)
		}
		if tp.watch.Failure() != nil || !strings.Contains(string(tp.school("https://a.example").rec.Config), "code_ttl") {
			t.Error("the change missed while the registry was down was not read")
		}
		if code, sum := platformHealth(t, tp); code != http.StatusOK || sum.RegistryError != "" {
			t.Errorf("health once the registry is read: %d %+v", code, sum)
		}
		if got := issuerOf(tp.do(t, "https://b.example"+discoveryPath)); got != "https://b.example" {
			t.Errorf("the school added while the registry was down: %q", got)
		}
	})
}

// /schoolgate/sites lists every school of a platform by its state
// (active, idle, failed, disabled) and /schoolgate/health counts them
// with the registry's size, building none: an idle school stays idle.
func TestPlatformAdminAPI(t *testing.T) {
	tp := newTestPlatform(t, 10)
	broken := tp.brokenData(t)
	tp.put(t, "https://active.example", nil, "")
	tp.put(t, "https://idle.example", nil, "")
	tp.put(t, "https://failed.example", nil, `,"data":`+strconv.Quote(broken))
	off := tp.put(t, "https://off.example", nil, "")
	off.Disabled = true
	if _, err := tp.reg.Put(t.Context(), off); err != nil {
		t.Fatal(err)
	}
	tp.do(t, "https://active.example"+discoveryPath)
	tp.do(t, "https://failed.example"+discoveryPath)
	runningAs(t, tp.app)

	rec := httptest.NewRecorder()
	if err := handleRunning(rec, httptest.NewRequest(http.MethodGet, "/schoolgate/running", nil)); err != nil {
		t.Fatal(err)
	}
	var list []siteStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]siteStatus{}
	for _, s := range list {
		got[s.Issuer] = s
		if s.Platform != "dir "+tp.root {
			t.Errorf("%s: platform %q", s.Issuer, s.Platform)
		}
	}
	for issuer, state := range map[string]string{"https://active.example": "active", "https://idle.example": "idle",
		"https://failed.example": "failed", "https://off.example": "disabled"} {
		if got[issuer].State != state {
			t.Errorf("%s: %+v, want %s", issuer, got[issuer], state)
		}
	}
	if a := got["https://active.example"]; len(a.KeyIDs) == 0 || !a.CanSign || a.Data != tp.dataFile(a.Issuer) {
		t.Errorf("the active school's keys and store: %+v", a)
	}
	if f := got["https://failed.example"]; f.NextTry == nil || !strings.Contains(f.Reason, "school.db") {
		t.Errorf("the failed school's reason, for the operator, and next try: %+v", f)
	}

	rec = httptest.NewRecorder()
	if err := handleHealth(rec, httptest.NewRequest(http.MethodGet, "/schoolgate/health", nil)); err != nil {
		t.Fatal(err)
	}
	var health struct {
		Healthy   bool              `json:"healthy"`
		Platforms []platformSummary `json:"platforms"`
		Sites     []struct {
			Issuer string `json:"issuer"`
		} `json:"sites"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &health); err != nil {
		t.Fatal(err)
	}
	want := platformSummary{Registry: "dir " + tp.root, Schools: 4, Active: 1, Failed: 1, Disabled: 1, MaxActive: 10}
	// A failed school is reported and does not take the instance out;
	// the built one is not checked (its own check is ?issuer=).
	if rec.Code != http.StatusOK || !health.Healthy || len(health.Platforms) != 1 || health.Platforms[0] != want ||
		len(health.Sites) != 1 || health.Sites[0].Issuer != "https://failed.example" {
		t.Errorf("health: %d %s, want 200 with %+v and the failed school", rec.Code, rec.Body, want)
	}
	if e := tp.school("https://idle.example"); e.state() != "idle" || storeOpen(tp.dataFile(e.rec.Issuer)) || tp.activeCount() != 1 {
		t.Errorf("the admin API built an idle school: %s, %d active", e.state(), tp.activeCount())
	}

	// One school's check, by its issuer in any spelling.
	for _, tt := range []struct {
		issuer string
		status int
		want   string
	}{
		{"HTTPS://Active.Example:443", http.StatusOK, `"store":"ok"`},
		{"https://idle.example", http.StatusOK, `"store":"ok"`}, // built for its check
		{"https://failed.example", http.StatusServiceUnavailable, "failed to load"},
		{"https://off.example", http.StatusConflict, "disabled"},
		{"https://none.example", http.StatusNotFound, "no school"},
		{"not an origin", http.StatusBadRequest, "issuer"},
	} {
		rec := httptest.NewRecorder()
		err := handleHealth(rec, httptest.NewRequest(http.MethodGet, "/schoolgate/health?issuer="+url.QueryEscape(tt.issuer), nil))
		status, body := rec.Code, rec.Body.String()
		var apiErr caddy.APIError
		if errors.As(err, &apiErr) {
			status, body = apiErr.HTTPStatus, apiErr.Err.Error()
		}
		if status != tt.status || !strings.Contains(body, tt.want) {
			t.Errorf("?issuer=%s: %d %s, want %d with %s", tt.issuer, status, body, tt.status, tt.want)
		}
	}
}

// The health check's counts follow the schools through their changes,
// kept as they change rather than counted at each check: built, failed
// and built again, disabled and enabled, removed.
func TestPlatformHealthCounts(t *testing.T) {
	tp := newTestPlatform(t, 10)
	broken := tp.brokenData(t)
	tp.put(t, "https://a.example", nil, "")
	tp.put(t, "https://b.example", nil, "")
	tp.put(t, "https://f.example", nil, `,"data":`+strconv.Quote(broken))
	off := tp.put(t, "https://off.example", nil, "")
	off.Disabled = true
	if _, err := tp.reg.Put(t.Context(), off); err != nil {
		t.Fatal(err)
	}
	tp.do(t, "https://a.example"+discoveryPath)
	tp.do(t, "https://f.example"+discoveryPath)
	check := func(step string, want platformSummary) {
		t.Helper()
		want.Registry, want.MaxActive = "dir "+tp.root, 10
		if _, got := platformHealth(t, tp); got != want {
			t.Errorf("%s: %+v, want %+v", step, got, want)
		}
		tp.mu.Lock()
		defer tp.mu.Unlock()
		if len(tp.failing) != want.Failed {
			t.Errorf("%s: %d schools kept as failing, want %d", step, len(tp.failing), want.Failed)
		}
	}
	check("at first", platformSummary{Schools: 4, Active: 1, Failed: 1, Disabled: 1})

	if err := os.RemoveAll(filepath.Join(broken, "school.db")); err != nil {
		t.Fatal(err)
	}
	f := tp.school("https://f.example")
	if !f.Rebuild(f.Failed()) {
		t.Fatal("the failed school was not built again")
	}
	check("the failed school built again", platformSummary{Schools: 4, Active: 2, Disabled: 1})

	off.Disabled = false
	if _, err := tp.reg.Put(t.Context(), off); err != nil {
		t.Fatal(err)
	}
	a := tp.put(t, "https://a.example", nil, "")
	a.Disabled = true
	if _, err := tp.reg.Put(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	check("one enabled, the built one disabled", platformSummary{Schools: 4, Active: 1, Disabled: 1})

	tp.put(t, "https://g.example", nil, `,"data":`+strconv.Quote(broken+"2"))
	if err := os.MkdirAll(filepath.Join(broken+"2", "school.db"), 0o700); err != nil {
		t.Fatal(err)
	}
	tp.do(t, "https://g.example"+discoveryPath)
	check("another failing", platformSummary{Schools: 5, Active: 1, Failed: 1, Disabled: 1})
	for _, issuer := range []string{"https://g.example", "https://a.example"} {
		if err := tp.reg.Remove(t.Context(), issuer); err != nil {
			t.Fatal(err)
		}
	}
	check("the failing and the disabled removed", platformSummary{Schools: 3, Active: 1})
}

// A reload hands the schools in use, whose records are unchanged, to the
// new config as they are (the same state, not built again), and leaves
// the others idle; the old config's end leaves them serving.
func TestPlatformReloadHandsOver(t *testing.T) {
	root := t.TempDir()
	records := func(tp *testPlatform) {
		tp.put(t, "https://a.example", nil, "")
		tp.put(t, "https://b.example", nil, "")
		tp.put(t, "https://c.example", nil, "")
	}
	old := newTestPlatformIn(t, root, 10, records)
	old.do(t, "https://a.example"+discoveryPath)
	old.do(t, "https://b.example"+discoveryPath)
	oldA := old.school("https://a.example").Active().Built().site
	prev := activeApp
	activeApp = func() (any, error) { return old.app, nil } // the running config
	t.Cleanup(func() { activeApp = prev })
	tp := newTestPlatformIn(t, root, 10, records, func(tp *testPlatform) {
		tp.put(t, "https://b.example", nil, `,"code_ttl":"30s"`) // changed by the reload
	})
	a := tp.school("https://a.example")
	if !a.IsActive() || a.Active().Built().site != oldA {
		t.Fatalf("the school in use was not handed over: %s", a.state())
	}
	for _, issuer := range []string{"https://b.example", "https://c.example"} {
		if got := tp.school(issuer).state(); got != "idle" {
			t.Errorf("%s is %s", issuer, got)
		}
	}
	old.end(t)
	if !storeOpen(tp.dataFile("https://a.example")) || siteHeld(a.prepared().key) != 1 {
		t.Fatalf("the old config's end let go of the school it handed over")
	}
	if got := issuerOf(tp.do(t, "https://a.example"+discoveryPath)); got != "https://a.example" {
		t.Errorf("a after the old config's end: %q", got)
	}
}

// A school of a postgres registry is a pgstore site of its issuer on the
// registry's database and key secret: let go of past max_active, it is
// built again from the database with the keys it had.
func TestPlatformPostgresSchools(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	pg := &PostgresStore{DSN: pgcluster.Database(t), KeySecret: "registry secret"}
	tp := newTestPlatform(t, 1, func(tp *testPlatform) {
		tp.reg = registry.NewMemory(validatePostgresRecord)
		tp.flaky.Memory = tp.reg
		tp.open = func(context.Context) (*openedRegistry, error) {
			return &openedRegistry{Registry: tp.flaky, place: placeInPostgres(pg), release: func() error { return nil }}, nil
		}
	})
	tp.put(t, "https://a.example", nil, "")
	tp.put(t, "https://b.example", nil, "")
	jwks := func(issuer string) string {
		t.Helper()
		rec := tp.do(t, issuer+"/.well-known/jwks.json")
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", issuer, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	first := jwks("https://a.example")
	a := tp.school("https://a.example")
	if st := a.Active().Built().stored; st.where != "postgres" {
		t.Fatalf("a is kept in %s", st.where)
	}
	jwks("https://b.example") // a is let go of
	if a.IsActive() {
		t.Fatal("a was not let go of past max_active")
	}
	if again := jwks("https://a.example"); again != first {
		t.Errorf("a built again from its database has other keys:\n%s\n%s", first, again)
	}
}

// platformHealth is /schoolgate/health's status with tp's config running,
// and its one platform's summary.
func platformHealth(t *testing.T, tp *testPlatform) (int, platformSummary) {
	t.Helper()
	runningAs(t, tp.app)
	rec := httptest.NewRecorder()
	if err := handleHealth(rec, httptest.NewRequest(http.MethodGet, "/schoolgate/health", nil)); err != nil {
		t.Fatal(err)
	}
	var health struct {
		Platforms []platformSummary `json:"platforms"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &health); err != nil || len(health.Platforms) != 1 {
		t.Fatalf("health: %d %s", rec.Code, rec.Body)
	}
	return rec.Code, health.Platforms[0]
}
