package school

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/internal/schedule"
	"github.com/schoolgate/schoolgate/option"
	"github.com/schoolgate/schoolgate/schooltest"
	"github.com/schoolgate/schoolgate/store"
)

const testIssuer = "https://school.example"

// testSite is a school built as caddymodule builds one, without Caddy:
// on a bbolt store, with an access token minted straight into the store.
type testSite struct {
	*Site
	store    store.Store
	token    string
	upstream *recordingNext
	observed *countingObserver
}

// recordingNext stands for the reverse proxy: it keeps what would be
// forwarded.
type recordingNext struct {
	header     http.Header
	assertions map[string]bool // distinct assertions seen: ES256 signatures are randomized, so one per signature
}

// TestMain runs the package's tests with a short wait before a school's
// first fetches (firstFetchDelay): their upstreams are up already.
func TestMain(m *testing.M) {
	firstFetchDelay = 10 * time.Millisecond
	os.Exit(m.Run())
}

func (n *recordingNext) ServeHTTP(_ http.ResponseWriter, r *http.Request) error {
	n.header = r.Header
	if a := r.Header.Get(AssertionHeader); a != "" {
		n.assertions[a] = true
	}
	return nil
}

// testConfig is a school's configuration on store, as caddymodule
// defaults it.
func testConfig(st store.Store) Config {
	return Config{Options: Options{Issuer: testIssuer, Upstream: "http://127.0.0.1:9080", SessionURL: "/api/session",
		LoginURL: "/login", AdminPrefix: "/admin/api"}, Store: st, Scheduler: schedule.New(1)}
}

// testRate is n events per period with a burst, as an option gives it.
func testRate(n int, period time.Duration, burst int) *option.Rate {
	return &option.Rate{Events: n, Period: option.Duration(period), Burst: burst}
}

// openStore opens a bbolt store that closes when the test ends.
func openStore(tb testing.TB) store.Store {
	tb.Helper()
	st, err := boltstore.Open(filepath.Join(tb.TempDir(), "school.db"), time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	// A test's store does not sync its file: no test here checks what a
	// crash leaves (boltstore's own tests do), and the syncs were most of
	// the package's time. A benchmark keeps the syncs it measures.
	if _, bench := tb.(*testing.B); !bench {
		if err := boltstore.NoSync(st); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// newTestSite builds a school on a new store; edit changes its
// configuration first.
func newTestSite(tb testing.TB, edit ...func(*Config)) *testSite {
	tb.Helper()
	st := openStore(tb)
	cfg := testConfig(st)
	obs := &countingObserver{counts: map[string]int{}}
	cfg.Observer = obs
	for _, e := range edit {
		e(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	s, err := New(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return &testSite{Site: s, store: st, token: mintMemberToken(tb, st, testIssuer),
		upstream: &recordingNext{assertions: map[string]bool{}}, observed: obs}
}

// mintMemberToken stores the student's grant "grant-1" and an access
// token of it, as a code exchange would.
func mintMemberToken(tb testing.TB, st store.Store, origin string) string {
	return schooltest.MemberToken(tb, st, origin, "grant-1", "")
}

// serve serves r through the school with the recording upstream as next.
func (ts *testSite) serve(tb testing.TB, r *http.Request) *httptest.ResponseRecorder {
	tb.Helper()
	ts.upstream.header = nil
	rec := httptest.NewRecorder()
	if err := ts.Serve(rec, r, ts.upstream); err != nil {
		tb.Fatal(err)
	}
	return rec
}

// countingObserver counts the outcomes the school reports.
type countingObserver struct {
	nopObserver
	counts map[string]int
}

func (o *countingObserver) ProtectedOutcome(outcome string) { o.counts["protected "+outcome]++ }
func (o *countingObserver) MCPCaller(caller string)         { o.counts["mcp "+caller]++ }
