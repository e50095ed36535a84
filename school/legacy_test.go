package school

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// hungLegacy is a legacy server that accepts every request and answers
// none until released (or, so that a test without the bound ends, after
// giveUp): what a wedged legacy server looks like from the gateway.
type hungLegacy struct {
	*httptest.Server
	release chan struct{}
	once    sync.Once
	arrived chan string // each request's path, as it reaches the server
}

func newHungLegacy(t *testing.T, giveUp time.Duration) *hungLegacy {
	t.Helper()
	h := &hungLegacy{release: make(chan struct{}), arrived: make(chan string, 1024)}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.arrived <- r.URL.Path
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		case <-time.After(giveUp):
		}
		io.WriteString(w, "late answer")
	}))
	t.Cleanup(func() {
		h.releaseAll()
		h.Close()
	})
	return h
}

func (h *hungLegacy) releaseAll() { h.once.Do(func() { close(h.release) }) }

// proxyTo is a reverse proxy to a legacy server, as next, that behaves
// towards the school as Caddy's does: its transport's error (a
// response-header timeout) is returned, and nothing written.
type proxyTo struct {
	target *url.URL
	tr     *http.Transport
}

func newProxyTo(t *testing.T, legacy string, headerTimeout time.Duration) proxyTo {
	t.Helper()
	u, err := url.Parse(legacy)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{ResponseHeaderTimeout: headerTimeout}
	t.Cleanup(tr.CloseIdleConnections)
	return proxyTo{target: u, tr: tr}
}

func (p proxyTo) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	out := r.Clone(r.Context())
	out.URL.Scheme, out.URL.Host, out.Host, out.RequestURI = p.target.Scheme, p.target.Host, "", ""
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		return fmt.Errorf("proxying: %w", err)
	}
	defer resp.Body.Close()
	maps.Copy(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	_, err = io.Copy(w, resp.Body)
	return err
}

// syncObserver counts refusals from many goroutines.
type syncObserver struct {
	nopObserver
	mu     sync.Mutex
	counts map[store.Cause]int
}

func (o *syncObserver) Refusal(cause store.Cause) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.counts[cause]++
}

func (o *syncObserver) count(cause store.Cause) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts[cause]
}

// legacySite is a school with budget b whose requests wait at most 10 ms
// for a place, so that tests of refusals are quick.
func legacySite(t *testing.T, b Budget) (*testSite, *syncObserver) {
	obs := &syncObserver{counts: map[store.Cause]int{}}
	ts := newTestSite(t, func(c *Config) { c.Budget = &b; c.Observer = obs })
	ts.legacy.wait = 10 * time.Millisecond
	return ts, obs
}

// usageCauses are the causes the school's usage counted in the last
// hour (only those counted).
func usageCauses(t *testing.T, ts *testSite) map[store.Cause]uint64 {
	t.Helper()
	u, err := ts.Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w := u.Window(time.Hour, time.Now())
	got := map[store.Cause]uint64{}
	for c, n := range w.Causes {
		if n != 0 {
			got[store.Cause(c)] = n
		}
	}
	return got
}

// request is a pass-through page, or with the school's member token a
// call of the protected Account API.
func (ts *testSite) request(path string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	if path == "/account/graphql" {
		r = httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"query":"{ me { id } }"}`))
		r.Header.Set("Authorization", "Bearer "+ts.token)
	}
	return r
}

// checkRefusal checks the shape of a refusal: plain text for a page, the
// protected resources' JSON (no Bearer challenge) for the Account API;
// Retry-After on a 503.
func checkRefusal(t *testing.T, rec *httptest.ResponseRecorder, path string, status int) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("%s: %d %s, want %d", path, rec.Code, rec.Body, status)
	}
	if got := rec.Header().Get("Retry-After"); (status == http.StatusServiceUnavailable) != (got != "") {
		t.Errorf("%s: Retry-After %q on a %d", path, got, status)
	}
	if rec.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("%s: Cache-Control %q", path, rec.Header().Get("Cache-Control"))
	}
	if path != "/account/graphql" {
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
			t.Errorf("%s: Content-Type %q, want plain text", path, rec.Header().Get("Content-Type"))
		}
		return
	}
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error"] != "temporarily_unavailable" {
		t.Errorf("%s: body %s (%v), want temporarily_unavailable", path, rec.Body, err)
	}
	if rec.Header().Get("WWW-Authenticate") != "" || rec.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("%s: headers %v: no challenge, CORS open", path, rec.Header())
	}
}

func TestLegacyTimeout(t *testing.T) {
	for _, path := range []string{"/courses/light", "/account/graphql"} {
		t.Run(path, func(t *testing.T) {
			legacy := newHungLegacy(t, 5*time.Second)
			ts, obs := legacySite(t, Budget{})
			rec := httptest.NewRecorder()
			if err := ts.Serve(rec, ts.request(path), newProxyTo(t, legacy.URL, 100*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			checkRefusal(t, rec, path, http.StatusGatewayTimeout)
			if obs.count(store.CauseLegacyTimeout) != 1 || ts.legacy.InFlight() != 0 {
				t.Errorf("counted %v, in flight %d", obs.counts, ts.legacy.InFlight())
			}
			if got := usageCauses(t, ts); !maps.Equal(got, map[store.Cause]uint64{store.CauseLegacyTimeout: 1}) {
				t.Errorf("the school's usage counts causes %v", got)
			}
		})
	}
}

// A place is held while a request waits on the legacy server; with none
// left the next request is refused at once, and a place freed lets the
// next one through.
func TestLegacyBusy(t *testing.T) {
	for _, path := range []string{"/courses/light", "/account/graphql"} {
		t.Run(path, func(t *testing.T) {
			legacy := newHungLegacy(t, 5*time.Second)
			ts, obs := legacySite(t, Budget{LegacyConcurrency: 2})
			next := newProxyTo(t, legacy.URL, 0)
			var wg sync.WaitGroup
			codes := make(chan int, 2)
			for range 2 {
				wg.Go(func() {
					rec := httptest.NewRecorder()
					_ = ts.Serve(rec, ts.request(path), next)
					codes <- rec.Code
				})
			}
			<-legacy.arrived
			<-legacy.arrived
			rec := httptest.NewRecorder()
			if err := ts.Serve(rec, ts.request(path), next); err != nil {
				t.Fatal(err)
			}
			checkRefusal(t, rec, path, http.StatusServiceUnavailable)
			if len(legacy.arrived) != 0 || obs.count(store.CauseLegacyBusy) != 1 {
				t.Errorf("the refused request reached the legacy server, or was not counted: %v", obs.counts)
			}
			if got := usageCauses(t, ts); !maps.Equal(got, map[store.Cause]uint64{store.CauseLegacyBusy: 1}) {
				t.Errorf("the school's usage counts causes %v", got)
			}
			legacy.releaseAll()
			wg.Wait()
			if a, b := <-codes, <-codes; a != 200 || b != 200 || ts.legacy.InFlight() != 0 {
				t.Errorf("the waiting requests: %d %d, in flight %d", a, b, ts.legacy.InFlight())
			}
			rec = httptest.NewRecorder()
			if err := ts.Serve(rec, ts.request(path), next); err != nil || rec.Code != 200 {
				t.Errorf("after the places were freed: %d %v", rec.Code, err)
			}
		})
	}
}

// Two schools share one legacy server and one proxy (as a pooled proxy
// is shared): the one whose requests hang fills its own bound, and the
// other is served as if nothing happened.
func TestLegacyBoundIsTheSchools(t *testing.T) {
	release := make(chan struct{})
	hung := make(chan struct{}, 64)
	legacy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/hang") {
			hung <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		io.WriteString(w, "page")
	}))
	next := newProxyTo(t, legacy.URL, 0)
	flooded, floodObs := legacySite(t, Budget{LegacyConcurrency: 4})
	other, otherObs := legacySite(t, Budget{LegacyConcurrency: 4})
	var wg sync.WaitGroup
	defer legacy.Close()
	defer wg.Wait()
	defer close(release)
	for range 4 {
		wg.Go(func() { _ = flooded.Serve(httptest.NewRecorder(), flooded.request("/hang"), next) })
	}
	for range 4 {
		<-hung
	}
	for i := range 20 {
		rec := httptest.NewRecorder()
		if err := flooded.Serve(rec, flooded.request("/hang"), next); err != nil || rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("flooded school, request %d: %d %v", i, rec.Code, err)
		}
		rec = httptest.NewRecorder()
		if err := other.Serve(rec, other.request("/courses/light"), next); err != nil || rec.Code != 200 || rec.Body.String() != "page" {
			t.Fatalf("other school, request %d: %d %q %v", i, rec.Code, rec.Body, err)
		}
	}
	if floodObs.count(store.CauseLegacyBusy) != 20 || otherObs.count(store.CauseLegacyBusy) != 0 || other.legacy.InFlight() != 0 {
		t.Errorf("refusals: flooded %v, other %v", floodObs.counts, otherObs.counts)
	}
}

// timeoutNext is a proxy whose transport gave up otherwise (a dial
// timeout, fastcgi's read_timeout): Caddy's reverse proxy returns such
// an error and writes nothing.
type timeoutNext struct{}

func (timeoutNext) ServeHTTP(http.ResponseWriter, *http.Request) error {
	return fmt.Errorf("proxying: %w", &net.OpError{Op: "read", Net: "tcp", Err: deadlineError{}})
}

type deadlineError struct{}

func (deadlineError) Error() string   { return "i/o timeout" }
func (deadlineError) Timeout() bool   { return true }
func (deadlineError) Temporary() bool { return true }

func TestLegacyTransportTimeout(t *testing.T) {
	for _, path := range []string{"/courses/light", "/account/graphql"} {
		ts, obs := legacySite(t, Budget{})
		rec := httptest.NewRecorder()
		if err := ts.Serve(rec, ts.request(path), timeoutNext{}); err != nil {
			t.Fatal(err)
		}
		checkRefusal(t, rec, path, http.StatusGatewayTimeout)
		if obs.count(store.CauseLegacyTimeout) != 1 {
			t.Errorf("%s: counted %v", path, obs.counts)
		}
	}
	// Any other error is the proxy's to answer.
	ts, _ := legacySite(t, Budget{})
	other := errors.New("no upstream")
	err := ts.Serve(httptest.NewRecorder(), ts.request("/courses/light"), errNext{other})
	if !errors.Is(err, other) {
		t.Errorf("error %v, want the proxy's", err)
	}
}

type errNext struct{ err error }

func (n errNext) ServeHTTP(http.ResponseWriter, *http.Request) error { return n.err }

// The school's own calls count against the same bound: with no place
// left, the MCP tools' Account API call is refused without reaching the
// legacy server, and a call done gives its place back.
func TestLegacyOwnCalls(t *testing.T) {
	legacy := newHungLegacy(t, 5*time.Second)
	ts, obs := legacySite(t, Budget{LegacyConcurrency: 1})
	ts.cfg.Upstream = legacy.URL
	tok, ch := policy.Check(context.Background(), ts.as, ts.request("/account/graphql"), policy.Requirement{}, testIssuer)
	if ch != nil {
		t.Fatal(ch.Description)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ts.accountQuery(context.Background(), tok, "{ me { id } }", nil)
		done <- err
	}()
	<-legacy.arrived
	if _, err := ts.accountQuery(context.Background(), tok, "{ me { id } }", nil); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("second call: %v, want busy", err)
	}
	if len(legacy.arrived) != 0 || obs.count(store.CauseLegacyBusy) != 1 {
		t.Errorf("the refused call reached the legacy server, or was not counted: %v", obs.counts)
	}
	legacy.releaseAll()
	<-done // the answer is not JSON: an error, but the call was made
	if ts.legacy.InFlight() != 0 {
		t.Errorf("in flight %d after the call", ts.legacy.InFlight())
	}
}

// The session lookup, which a person waits on, is bounded more tightly
// than the school's other calls, and never more loosely than its client.
func TestLegacySessionClient(t *testing.T) {
	l := NewLegacy(0, nil)
	for _, tt := range []struct{ client, session time.Duration }{
		{15 * time.Second, sessionLookupTimeout}, {0, sessionLookupTimeout}, {2 * time.Second, 2 * time.Second},
	} {
		calls, session := legacyClients(&http.Client{Timeout: tt.client}, l, nopObserver{}, "")
		if calls.Timeout != tt.client || session.Timeout != tt.session {
			t.Errorf("client %s: calls %s, session %s, want %s", tt.client, calls.Timeout, session.Timeout, tt.session)
		}
	}
}

// A school that failed to load still passes its public pages on, within
// the bound.
func TestLegacyFailedSchool(t *testing.T) {
	legacy := newHungLegacy(t, 5*time.Second)
	obs := &syncObserver{counts: map[store.Cause]int{}}
	l := NewLegacy(0, obs)
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/courses/light", nil)
	if err := ServeFailed(rec, r, newProxyTo(t, legacy.URL, 100*time.Millisecond), l, &policy.Policy{AdminPrefix: "/admin/api"}, "its store could not be opened", 7); err != nil {
		t.Fatal(err)
	}
	checkRefusal(t, rec, "/courses/light", http.StatusGatewayTimeout)
	if obs.count(store.CauseLegacyTimeout) != 1 {
		t.Errorf("counted %v", obs.counts)
	}
}

// A request that finds no place waits for one a moment, and takes the
// first freed rather than being refused.
func TestLegacyWaitsForAPlace(t *testing.T) {
	legacy := newHungLegacy(t, 5*time.Second)
	ts, obs := legacySite(t, Budget{LegacyConcurrency: 1})
	ts.legacy.wait = 5 * time.Second
	next := newProxyTo(t, legacy.URL, 0)
	first := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		_ = ts.Serve(rec, ts.request("/courses/first"), next)
		first <- rec.Code
	}()
	<-legacy.arrived
	second := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		_ = ts.Serve(rec, ts.request("/courses/second"), next)
		second <- rec.Code
	}()
	for deadline := time.Now().Add(5 * time.Second); ts.legacy.queued.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	legacy.releaseAll() // the first is answered, the second takes its place
	if a, b := <-first, <-second; a != 200 || b != 200 || obs.count(store.CauseLegacyBusy) != 0 {
		t.Errorf("first %d, second %d, counted %v", a, b, obs.counts)
	}
}

// BenchmarkLegacyForward is what the bound costs a request on its way to
// the legacy server: a place taken and given back, from every core at
// once.
func BenchmarkLegacyForward(b *testing.B) {
	l := NewLegacy(0, nil)
	var next Handler = errNext{} // boxed once, not per call
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w, r := httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/courses/light", nil)
		for pb.Next() {
			if err := l.Forward(w, r, next); err != nil {
				b.Fatal(err)
			}
		}
	})
}
