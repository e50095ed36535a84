package school

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/admission"
	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/option"
	"github.com/schoolgate/schoolgate/schooltest"
	"github.com/schoolgate/schoolgate/store"
)

func (o *countingObserver) Refusal(cause store.Cause) { o.counts["refused "+cause.String()]++ }

// admitRefusal is what a refused request must be answered with, by endpoint.
type admitRefusal struct {
	name, method, path string
	header             map[string]string
	contentType        string
	body               []string
}

// refusals are the endpoints' shapes of a refusal: the error page in
// the person's language, RFC 6749 JSON at the OAuth endpoints, a JSON-RPC
// error at /mcp, the protected API's JSON error, plain text elsewhere.
var refusals = []admitRefusal{
	{"token endpoint", "POST", "/api/oauth/token", nil, "application/json",
		[]string{`"error":"temporarily_unavailable"`, "retry after"}},
	{"sign-in page", "GET", "/oauth/authorize?client_id=x", map[string]string{"Accept-Language": "de"}, "text/html",
		[]string{`lang="de"`, "Die Schule ist gerade ausgelastet"}},
	{"person's area", "GET", "/oauth/account/applications", map[string]string{"Accept-Language": "it"}, "text/html",
		[]string{"La scuola è molto impegnata"}},
	{"anonymous /mcp", "POST", "/mcp", map[string]string{"Content-Type": "application/json"}, "application/json",
		[]string{`"jsonrpc":"2.0"`, `"code":-32000`, "retry after"}},
	{"protected API", "POST", "/account/graphql", map[string]string{"Authorization": "Bearer x"}, "application/json",
		[]string{`"error":"temporarily_unavailable"`}},
	{"document", "GET", "/llms.txt", nil, "text/plain", []string{"retry after"}},
	{"legacy page, a browser", "GET", "/courses/light", map[string]string{"Accept": "text/html", "Accept-Language": "fr"}, "text/html",
		[]string{"L&#39;école est très sollicitée"}},
	{"legacy, not a page", "POST", "/api/cart", nil, "text/plain", []string{"retry after"}},
}

// checkAdmitRefusal serves tt and checks its status, Retry-After and shape.
func checkAdmitRefusal(t *testing.T, ts *testSite, tt admitRefusal, status int) {
	t.Helper()
	r := httptest.NewRequest(tt.method, tt.path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	for k, v := range tt.header {
		r.Header.Set(k, v)
	}
	rec := ts.serve(t, r)
	if ts.upstream.header != nil {
		t.Fatalf("%s: forwarded to the legacy server", tt.name)
	}
	if rec.Code != status {
		t.Fatalf("%s: status %d, want %d: %s", tt.name, rec.Code, status, rec.Body)
	}
	if ra := rec.Header().Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("%s: Retry-After %q", tt.name, ra)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, tt.contentType) {
		t.Errorf("%s: Content-Type %q, want %s", tt.name, ct, tt.contentType)
	}
	for _, want := range tt.body {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: body lacks %q: %s", tt.name, want, rec.Body)
		}
	}
	if strings.HasPrefix(tt.contentType, "application/json") && !json.Valid(rec.Body.Bytes()) {
		t.Errorf("%s: not JSON: %s", tt.name, rec.Body)
	}
}

// A school whose budget of requests is spent answers 429 with
// Retry-After in each endpoint's shape, and still serves its discovery
// documents and JWKS; the budget refills with time.
func TestBudgetRequests(t *testing.T) {
	c := schooltest.NewClock(time.Now())
	ts := newTestSite(t, func(cfg *Config) {
		cfg.Budget = &Budget{Requests: testRate(1, time.Minute, 1)}
		cfg.Now = c.Now
	})
	// The one request of the minute.
	ts.serve(t, httptest.NewRequest("GET", "/courses/light", nil))
	for _, tt := range refusals {
		checkAdmitRefusal(t, ts, tt, http.StatusTooManyRequests)
	}
	if n := ts.observed.counts["refused budget_requests"]; n != len(refusals) {
		t.Errorf("counted %d refusals by budget_requests, want %d: %v", n, len(refusals), ts.observed.counts)
	}
	for _, path := range []string{"/.well-known/openid-configuration", "/.well-known/oauth-authorization-server",
		"/.well-known/oauth-protected-resource", "/.well-known/jwks.json"} {
		if rec := ts.serve(t, httptest.NewRequest("GET", path, nil)); rec.Code != http.StatusOK {
			t.Errorf("%s with the budget spent: %d, want 200", path, rec.Code)
		}
	}
	c.Advance(time.Minute)
	if rec := ts.serve(t, httptest.NewRequest("GET", "/courses/light", nil)); ts.upstream.header == nil {
		t.Errorf("a minute later: %d %s, want the request forwarded", rec.Code, rec.Body)
	}
}

// A refusal writes nothing to the store: a registration refused for the
// budget creates no client.
func TestBudgetRefusalWritesNothing(t *testing.T) {
	ts := newTestSite(t, func(cfg *Config) { cfg.Budget = &Budget{Requests: testRate(1, time.Hour, 1)} })
	ts.serve(t, httptest.NewRequest("GET", "/courses/light", nil))
	r := httptest.NewRequest("POST", "/api/oauth/register",
		strings.NewReader(`{"client_name":"x","redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"none"}`))
	r.Header.Set("Content-Type", "application/json")
	if rec := ts.serve(t, r); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("register: %d %s", rec.Code, rec.Body)
	}
	clients, err := ts.store.ListClients(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(clients) != 0 {
		t.Errorf("a refused registration stored %d clients", len(clients))
	}
}

// The anonymous /mcp budget counts anonymous calls only: a member's call
// is served when the anonymous budget is spent.
func TestBudgetMCPAnonymous(t *testing.T) {
	ts := newTestSite(t, func(cfg *Config) { cfg.Budget = &Budget{MCPAnonymous: testRate(1, time.Hour, 1)} })
	call := func(bearer string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", testIssuer+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if bearer != "" {
			r.Header.Set("Authorization", "Bearer "+bearer)
		}
		return ts.serve(t, r)
	}
	if rec := call(""); rec.Code != http.StatusOK {
		t.Fatalf("first anonymous call: %d %s", rec.Code, rec.Body)
	}
	if rec := call(""); rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), `"jsonrpc"`) {
		t.Fatalf("second anonymous call: %d %s, want a 429 JSON-RPC error", rec.Code, rec.Body)
	}
	if rec := call(ts.token); rec.Code != http.StatusOK {
		t.Fatalf("a member's call: %d %s", rec.Code, rec.Body)
	}
	if ts.observed.counts["refused budget_mcp_anonymous"] != 1 {
		t.Errorf("counted %v", ts.observed.counts)
	}
}

// An anonymous /mcp call refused by the anonymous budget spends nothing
// of the school's budget of requests: the event it took there is given
// back, with fair share on and off.
func TestBudgetMCPRefusalSpendsNoRequests(t *testing.T) {
	for _, gated := range []bool{false, true} {
		t.Run(fmt.Sprintf("fair share %v", gated), func(t *testing.T) {
			c := schooltest.NewClock(time.Now())
			ts := newTestSite(t, func(cfg *Config) {
				cfg.Budget = &Budget{Requests: testRate(2, time.Hour, 2), MCPAnonymous: testRate(1, time.Hour, 1)}
				cfg.Now = c.Now
				if gated {
					cfg.Admission = admission.NewGate(admission.Options{}).School(1)
				}
			})
			call := func() int {
				r := httptest.NewRequest("POST", testIssuer+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", "application/json, text/event-stream")
				return ts.serve(t, r).Code
			}
			if got := call(); got != http.StatusOK {
				t.Fatalf("first anonymous call: %d", got)
			}
			for range 3 {
				if got := call(); got != http.StatusTooManyRequests {
					t.Fatalf("anonymous call past its budget: %d, want 429", got)
				}
			}
			// One of the school's two requests is left.
			if rec := ts.serve(t, httptest.NewRequest("GET", "/courses/light", nil)); ts.upstream.header == nil {
				t.Fatalf("the school's last request of the hour: %d %s, want it forwarded", rec.Code, rec.Body)
			}
		})
	}
}

// Anonymous /mcp has a limit per caller's address by default, as the
// OAuth endpoints have; another address is not refused for it.
func TestMCPAnonymousPerAddress(t *testing.T) {
	if authserver.DefaultRateLimits.MCPAnonymous.Every <= 0 {
		t.Fatal("no default anonymous /mcp limit per address")
	}
	ts := newTestSite(t, func(cfg *Config) {
		cfg.RateLimits = &authserver.RateLimitOptions{Limits: map[string]option.Rate{"mcp_anonymous": *testRate(1, time.Hour, 2)}}
	})
	call := func(addr string) int {
		r := httptest.NewRequest("POST", testIssuer+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.RemoteAddr = addr + ":4000"
		return ts.serve(t, r).Code
	}
	for i, want := range []int{200, 200, 429} {
		if got := call("192.0.2.1"); got != want {
			t.Fatalf("call %d from one address: %d, want %d", i+1, got, want)
		}
	}
	if got := call("192.0.2.2"); got != http.StatusOK {
		t.Fatalf("another address: %d", got)
	}
	if ts.observed.counts["refused mcp_anonymous_address"] != 1 {
		t.Errorf("counted %v", ts.observed.counts)
	}
}

// With several instances serving the school, each takes its part of the
// budget: a budget of 4 a minute across two instances lets this one
// admit 2.
func TestBudgetDividedByInstances(t *testing.T) {
	c := schooltest.NewClock(time.Now())
	ts := newTestSite(t, func(cfg *Config) {
		cfg.Budget = &Budget{Requests: testRate(4, time.Minute, 4)}
		cfg.Instances = func() int { return 2 }
		cfg.Now = c.Now
	})
	admitted := 0
	for range 6 {
		if rec := ts.serve(t, httptest.NewRequest("GET", "/courses/light", nil)); rec.Code != http.StatusTooManyRequests {
			admitted++
		}
	}
	if admitted != 2 {
		t.Fatalf("admitted %d of a budget of 4 between two instances, want 2", admitted)
	}
	c.Advance(30 * time.Second) // this instance's part refills at 2 a minute
	if rec := ts.serve(t, httptest.NewRequest("GET", "/courses/light", nil)); rec.Code == http.StatusTooManyRequests {
		t.Fatalf("half a minute later: refused")
	}
}

// sharedGate makes a gate whose instance is shared by the test's school
// and another, which holds the one slot: the school's requests wait
// their turn past the bound.
func busyGate(t *testing.T, ts func(*admission.School) *testSite) (*testSite, func()) {
	t.Helper()
	g := admission.NewGate(admission.Options{Concurrency: 1, Wait: 5 * time.Millisecond})
	mine, other := g.School(1), g.School(1)
	site := ts(mine)
	sl, err := mine.Admit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sl.Release()
	held, err := other.Admit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return site, held.Release
}

// A request whose turn on the shared instance does not come within the
// bound is answered 503 with Retry-After, in its endpoint's shape
// (discovery included: fair share counts every request).
func TestFairShareRefusal(t *testing.T) {
	ts, release := busyGate(t, func(h *admission.School) *testSite {
		return newTestSite(t, func(cfg *Config) { cfg.Admission = h })
	})
	defer release()
	discovery := admitRefusal{"discovery", "GET", "/.well-known/openid-configuration", nil, "application/json",
		[]string{`"error":"temporarily_unavailable"`}}
	for _, tt := range append(refusals, discovery) {
		checkAdmitRefusal(t, ts, tt, http.StatusServiceUnavailable)
	}
	if n := ts.observed.counts["refused fair_share"]; n != len(refusals)+1 {
		t.Errorf("counted %v", ts.observed.counts)
	}
}

// A request refused for its turn on the instance spends nothing of the
// school's budget: the next, admitted, finds the budget's one event.
func TestFairShareRefusalSpendsNoBudget(t *testing.T) {
	ts, release := busyGate(t, func(h *admission.School) *testSite {
		return newTestSite(t, func(cfg *Config) {
			cfg.Admission = h
			cfg.Budget = &Budget{Requests: testRate(1, time.Hour, 1)}
		})
	})
	ask := func() *httptest.ResponseRecorder {
		return ts.serve(t, httptest.NewRequest("GET", "/courses/light", nil))
	}
	if rec := ask(); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("while the other school holds the slot: %d, want 503", rec.Code)
	}
	release()
	if rec := ask(); rec.Code == http.StatusTooManyRequests || rec.Code == http.StatusServiceUnavailable || ts.upstream.header == nil {
		t.Fatalf("admitted after a refusal for its turn: %d %s, want it forwarded (the budget untouched)", rec.Code, rec.Body)
	}
	if rec := ask(); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("the budget's second request of the hour: %d, want 429", rec.Code)
	}
}

// A request gives its slot back before it goes to the legacy server: a
// slow legacy server holds none of the instance.
func TestSlotReleasedBeforeTheLegacyServer(t *testing.T) {
	g := admission.NewGate(admission.Options{Concurrency: 4})
	mine, other := g.School(1), g.School(1)
	ts := newTestSite(t, func(cfg *Config) { cfg.Admission = mine })
	sl, _ := other.Admit(context.Background()) // the instance is shared: slots count
	defer sl.Release()
	for _, tt := range []struct{ method, path string }{{"GET", "/courses/light"}, {"POST", "/account/graphql"}} {
		held := -1
		next := handlerFunc(func(http.ResponseWriter, *http.Request) error { held = mine.InFlight(); return nil })
		r := httptest.NewRequest(tt.method, tt.path, nil)
		r.Header.Set("Authorization", "Bearer "+ts.token)
		if err := ts.Serve(httptest.NewRecorder(), r, next); err != nil {
			t.Fatal(err)
		}
		if held != 0 {
			t.Errorf("%s %s: the school held %d slots while the legacy server answered", tt.method, tt.path, held)
		}
	}
	if mine.InFlight() != 0 {
		t.Errorf("%d slots held after the requests", mine.InFlight())
	}
}

type handlerFunc func(http.ResponseWriter, *http.Request) error

func (f handlerFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) error { return f(w, r) }

// A request gives its slot back while it waits on the legacy server (the
// sign-in's session lookup) and on the store (a commit's sync), and takes
// it again after.
func TestSlotPausedWhileWaiting(t *testing.T) {
	g := admission.NewGate(admission.Options{Concurrency: 4})
	mine, other := g.School(1), g.School(1)
	var during atomic.Int64
	during.Store(-1)
	legacy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		during.Store(int64(mine.InFlight()))
		http.Error(w, `{"error":"not_signed_in"}`, http.StatusUnauthorized)
	}))
	defer legacy.Close()
	ts := newTestSite(t, func(cfg *Config) { cfg.Admission, cfg.Upstream = mine, legacy.URL })
	sl, _ := other.Admit(context.Background()) // the instance is shared: slots count
	defer sl.Release()
	r := httptest.NewRequest("GET", "/oauth/account/applications", nil)
	r.Header.Set("Cookie", "session=x")
	ts.serve(t, r)
	if during.Load() != 0 {
		t.Errorf("the school held %d slots while the legacy server answered the session lookup", during.Load())
	}
	if mine.InFlight() != 0 {
		t.Errorf("%d slots held after the request", mine.InFlight())
	}
}

// placeWaiter records how many places of the school's legacy bound were
// taken when the request's slot was paused and resumed.
type placeWaiter struct {
	legacy          *Legacy
	atPause, atBack []int
}

func (w *placeWaiter) Pause()               { w.atPause = append(w.atPause, w.legacy.InFlight()) }
func (w *placeWaiter) Resume()              { w.atBack = append(w.atBack, w.legacy.InFlight()) }
func (w *placeWaiter) Charge(time.Duration) {}

// A call of the school's own gives its slot back before it waits for a
// place towards the legacy server, and takes it back only once the place
// is given back (its body closed): never a place held while waiting for a
// turn, nor a slot while waiting for a place.
func TestOwnCallsPauseAroundTheirPlace(t *testing.T) {
	legacy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer legacy.Close()
	l := NewLegacy(1, nil)
	calls, _ := legacyClients(http.DefaultClient, l, nopObserver{}, "")
	w := &placeWaiter{legacy: l}
	req, _ := http.NewRequestWithContext(store.WithWaiter(context.Background(), w), http.MethodGet, legacy.URL, nil)
	resp, err := calls.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.atBack) != 0 {
		t.Fatalf("resumed while the place was still held: %v", w.atBack)
	}
	_ = resp.Body.Close()
	if fmt.Sprint(w.atPause) != "[0]" || fmt.Sprint(w.atBack) != "[0]" {
		t.Errorf("places taken when paused %v and resumed %v, want [0] and [0]", w.atPause, w.atBack)
	}
	// A call refused for want of a place resumes too.
	l.slots <- struct{}{}
	l.wait = time.Millisecond
	req, _ = http.NewRequestWithContext(store.WithWaiter(context.Background(), w), http.MethodGet, legacy.URL, nil)
	if _, err := calls.Do(req); err == nil {
		t.Fatal("a call without a place went through")
	}
	if len(w.atPause) != 2 || len(w.atBack) != 2 {
		t.Errorf("pauses %v, resumes %v", w.atPause, w.atBack)
	}
}
