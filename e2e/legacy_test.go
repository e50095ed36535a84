package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// hungLegacy accepts connections, reads each request and never answers:
// a wedged legacy server. It tells each request's path as it arrives and
// how many connections are open to it.
type hungLegacy struct {
	URL     string
	arrived chan string
	mu      sync.Mutex
	open    int
}

func startHungLegacy(t testing.TB) *hungLegacy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hungLegacy{URL: "http://" + l.Addr().String(), arrived: make(chan string, 100000)}
	var conns sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		conns.Wait()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Go(func() { h.hold(c) })
		}
	}()
	return h
}

// hold keeps a connection until the other side closes it, answering
// nothing.
func (h *hungLegacy) hold(c net.Conn) {
	h.mu.Lock()
	h.open++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.open--
		h.mu.Unlock()
		c.Close()
	}()
	if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
		h.arrived <- req.URL.Path
	}
	_, _ = io.Copy(io.Discard, c) // until the proxy gives up
}

func (h *hungLegacy) conns() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.open
}

// await waits until n requests for path have arrived.
func (h *hungLegacy) await(t testing.TB, path string, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for n > 0 {
		select {
		case p := <-h.arrived:
			if p == path {
				n--
			}
		case <-deadline:
			t.Fatalf("%d requests for %s still to arrive at the legacy server", n, path)
		}
	}
}

// checkLegacyRefusal checks a refusal's status and shape: the protected
// resources' JSON without a Bearer challenge, or plain text for a page;
// Retry-After on a 503.
func checkLegacyRefusal(t *testing.T, r response, status int, protected bool) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%d %s, want %d", r.status, r.body, status)
	}
	if (status == http.StatusServiceUnavailable) != (r.header.Get("Retry-After") != "") {
		t.Errorf("Retry-After %q on a %d", r.header.Get("Retry-After"), status)
	}
	if !protected {
		if !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
			t.Errorf("Content-Type %q, want plain text", r.header.Get("Content-Type"))
		}
		return
	}
	var body map[string]string
	if err := json.Unmarshal([]byte(r.body), &body); err != nil || body["error"] != "temporarily_unavailable" {
		t.Errorf("body %s (%v)", r.body, err)
	}
	if r.header.Get("WWW-Authenticate") != "" {
		t.Errorf("a Bearer challenge on a %d: %s", status, r.header.Get("WWW-Authenticate"))
	}
}

// A school whose legacy server accepts and never answers holds at most
// its budget's legacy_concurrency requests, each at most legacy_timeout;
// more are refused after a second's wait for a place, without reaching
// the legacy server, and a school beside it serves as before.
func TestLegacyHungIsBounded(t *testing.T) {
	sch := startSchool(t)
	hung := startHungLegacy(t)
	dir := t.TempDir()
	portA, portB := freePort(t), freePort(t)
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	clients := vendorBlock("Member App", "member-app", redirect, "member", "openid account:read")
	blockA := siteBlock(portA, sch.URL, filepath.Join(dir, "a"), clients)
	blockB := siteBlock(portB, sch.URL, filepath.Join(dir, "b"), "")
	gw := startGateway(t, dir, blockA, blockB)
	member := tokenFor(t, gw.URL, "member-app", redirect, "openid account:read", "student@demo.school", "student")

	// School A's legacy server hangs from now on.
	hungA := strings.ReplaceAll(blockA, "school_gateway "+sch.URL, "school_gateway "+hung.URL)
	hungA = strings.Replace(hungA, "\t\tmcp_connections on\n", "\t\tmcp_connections on\n\t\tbudget {\n\t\t\tlegacy_concurrency 4\n\t\t\tlegacy_timeout 5s\n\t\t}\n", 1)
	gw.reload(hungA, blockB)
	waitHTTP(t, gw.URL+"/.well-known/jwks.json")
	a, b := gw.URL, fmt.Sprintf("http://127.0.0.1:%d", portB)

	held := make(chan response, 4)
	for range 4 {
		go func() { held <- call(t, "GET", a+"/courses/held", "", "", nil) }()
	}
	hung.await(t, "/courses/held", 4)
	checkLegacyRefusal(t, call(t, "GET", a+"/courses/refused", "", "", nil), http.StatusServiceUnavailable, false)
	checkLegacyRefusal(t, call(t, "POST", a+"/account/graphql", member.AccessToken, viewerQuery, nil), http.StatusServiceUnavailable, true)
	for i := range 10 {
		if status, _, _ := get(t, b+"/courses/photography-fundamentals"); status != 200 {
			t.Fatalf("school B, request %d, while A's legacy server hangs: %d", i, status)
		}
	}
	for range 4 {
		checkLegacyRefusal(t, <-held, http.StatusGatewayTimeout, false)
	}
	// The places are free again: the next waits its legacy_timeout, and
	// is 504.
	checkLegacyRefusal(t, call(t, "POST", a+"/account/graphql", member.AccessToken, viewerQuery, nil), http.StatusGatewayTimeout, true)
	var beyond []string
	for len(hung.arrived) > 0 {
		if p := <-hung.arrived; p != "/catalog.json" && p != "/account/graphql" {
			beyond = append(beyond, p)
		}
	}
	if len(beyond) > 0 { // the Account API call just made is the one expected
		t.Errorf("requests reached the legacy server beyond the bound: %q", beyond)
	}
	_, _, raw := get(t, "http://"+gw.AdminAddr+"/metrics")
	for _, want := range []string{
		fmt.Sprintf(`schoolgate_school_requests_refused_total{cause="legacy_busy",site="%s"} 2`, a),
		fmt.Sprintf(`schoolgate_school_requests_refused_total{cause="legacy_timeout",site="%s"} 5`, a),
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// sharedLegacy is one legacy server for several schools: a request for a
// path under /hang waits until free (telling its arrival on hung), any
// other is answered "page".
type sharedLegacy struct {
	URL  string
	hung chan string
	free func()
}

func startSharedLegacy(t *testing.T) *sharedLegacy {
	t.Helper()
	release := make(chan struct{})
	l := &sharedLegacy{hung: make(chan string, 64)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/hang") {
			l.hung <- r.Host
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, "page")
	}))
	var once sync.Once
	l.URL, l.free = srv.URL, func() { once.Do(func() { close(release) }) }
	t.Cleanup(func() {
		l.free()
		srv.Close()
	})
	return l
}

// floodShared fills school a's bound of n places with requests that hang,
// then checks that a's next is refused while b's reaches the legacy
// server and b's pages are served; get fetches a URL.
func floodShared(t *testing.T, legacy *sharedLegacy, n int, a, b string, get func(string) response) {
	t.Helper()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer legacy.free()
	for range n {
		wg.Go(func() { get(a + "/hang") })
	}
	for range n {
		select {
		case <-legacy.hung:
		case <-time.After(10 * time.Second):
			t.Fatal("school a's requests did not reach the legacy server")
		}
	}
	checkLegacyRefusal(t, get(a+"/hang"), http.StatusServiceUnavailable, false)
	// B's own place: its request reaches the legacy server, through the
	// same proxy whose connections A's requests hold.
	wg.Go(func() {
		if r := get(b + "/hang"); r.status != 200 || string(r.body) != "page" {
			t.Errorf("school b's request: %d %s", r.status, r.body)
		}
	})
	select {
	case <-legacy.hung:
	case <-time.After(10 * time.Second):
		t.Fatal("school b's request did not reach the legacy server while a's bound is full")
	}
	for i := range 10 {
		if r := get(b + "/page"); r.status != 200 || string(r.body) != "page" {
			t.Fatalf("school b, request %d: %d %s", i, r.status, r.body)
		}
	}
}

// Two site blocks in front of one legacy server share one pooled proxy
// and its transport; each keeps its own bound, so only the one flooding
// it is refused.
func TestLegacySharedProxyBoundPerSchool(t *testing.T) {
	legacy := startSharedLegacy(t)
	dir := t.TempDir()
	portA, portB := freePort(t), freePort(t)
	budget := "\t\tbudget {\n\t\t\tlegacy_concurrency 4\n\t\t}\n"
	// siteBlock asks the legacy server for a catalog: this one has none,
	// which the schools log and serve without.
	gw := startGateway(t, dir, siteBlock(portA, legacy.URL, filepath.Join(dir, "a"), budget),
		siteBlock(portB, legacy.URL, filepath.Join(dir, "b"), budget))
	a, b := gw.URL, fmt.Sprintf("http://127.0.0.1:%d", portB)
	floodShared(t, legacy, 4, a, b, func(u string) response { return call(t, "GET", u, "", "", nil) })
	if status, _, _ := get(t, a+"/page"); status != 200 {
		t.Errorf("school a once its places are free: %d", status)
	}
}

// The same behind school_platform: two schools of a registry with one
// legacy server, one proxy from the pool, a bound each.
func TestLegacyPlatformBoundPerSchool(t *testing.T) {
	legacy := startSharedLegacy(t)
	dir := t.TempDir()
	regDir := filepath.Join(dir, "registry")
	reg := openRegistryDir(t, regDir)
	port := freePort(t)
	origin := func(name string) string { return fmt.Sprintf("http://%s.test:%d", name, port) }
	for _, name := range []string{"a", "b"} {
		putSchool(t, reg, origin(name), legacy.URL, false, `,"budget":{"legacy_concurrency":3}`)
	}
	startPlatform(t, dir, "", fmt.Sprintf("http://:%d {\n\tschool_platform {\n\t\tregistry dir %s\n\t}\n}\n", port, regDir))
	c := platformClient(fmt.Sprintf("127.0.0.1:%d", port))
	for _, name := range []string{"a", "b"} {
		waitFor(t, "school "+name+" to serve", func() bool {
			r, err := tryFetch(c, origin(name)+"/.well-known/oauth-authorization-server")
			return err == nil && r.status == 200
		})
	}
	floodShared(t, legacy, 3, origin("a"), origin("b"), func(u string) response { return fetch(t, c, u) })
}
