package caddymodule

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/schoolgate/schoolgate/registry"
)

// testPlatform is a platform started as the App's Start starts one, on a
// Memory registry whose schools keep their bbolt files under root, with
// legacy servers that answer "legacy <issuer>" and can be made to wait.
type testPlatform struct {
	*platform
	h        *Platform
	reg      *registry.Memory
	root     string
	upstream *testUpstream
}

func newTestPlatform(t testing.TB, maxActive int) *testPlatform {
	t.Helper()
	root := t.TempDir()
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
		upstream: &testUpstream{waits: map[string]chan struct{}{}, hits: map[string]int{}}}
	tp.open = func(context.Context) (*openedRegistry, error) {
		return &openedRegistry{Registry: tp.reg, place: placeInDir(tp.dataDir), release: func() error { return nil }}, nil
	}
	tp.platform.upstream = tp.upstream.handler
	if err := app.(*App).Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Cleanup(); err != nil {
			t.Error(err)
		}
	})
	return tp
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
	return tp.tables.state.Load().schools[issuer]
}

// do serves one request for url (http or https, which the request is
// made with) and returns the answer.
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
	mu    sync.Mutex
	hits  map[string]int
	waits map[string]chan struct{}
	// entered receives the issuer of a request that waits.
	entered chan string
}

func (u *testUpstream) handler(g *Gateway) (caddyhttp.Handler, error) {
	issuer := g.Issuer
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
	}), nil
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
	n, ok := stores.References(path)
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
	if n := siteHeld(a.key); n != 1 || tp.activeCount() != 1 || !storeOpen(tp.dataFile("https://a.example")) {
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
			if open != e.isActive() {
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
	if !a.isActive() || !storeOpen(tp.dataFile(a.rec.Issuer)) {
		t.Fatalf("a school with a request in flight was let go of: a %s", a.state())
	}
	if b.isActive() || storeOpen(tp.dataFile(b.rec.Issuer)) || tp.activeCount() != 1 {
		t.Errorf("past max_active, the school left idle was kept: b %s, %d active", b.state(), tp.activeCount())
	}
	release()
	if rec := <-done; rec.Body.String() != "legacy https://a.example" {
		t.Fatalf("a's request: %d %s", rec.Code, rec.Body)
	}
	if !a.isActive() || tp.activeCount() != 1 {
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
	oldSite, bSite := oldA.active.Load().site, b.active.Load().site
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
	if newA == oldA || !newA.isActive() || newA.active.Load().site == oldSite {
		t.Fatalf("the changed school was not built anew: %s", newA.state())
	}
	if b.retired.Load() || tp.school("https://b.example") != b || b.active.Load().site != bSite {
		t.Error("the unchanged school was rebuilt")
	}
	if siteHeld(oldA.key) != 1 {
		t.Errorf("the old school is held %d times while its request is in flight", siteHeld(oldA.key))
	}
	if got := issuerOf(tp.do(t, "https://a.example"+discoveryPath)); got != "https://a.example" {
		t.Errorf("the changed school: %q", got)
	}
	release()
	if rec := <-done; rec.Body.String() != "legacy https://a.example" {
		t.Fatalf("the request in flight: %d %s", rec.Code, rec.Body)
	}
	if siteHeld(oldA.key) != 0 || tp.activeCount() != 2 {
		t.Errorf("the old school is held %d times after its last request, %d active", siteHeld(oldA.key), tp.activeCount())
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
