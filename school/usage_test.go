package school

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

var minute0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// The recorder's request path allocates nothing.
func TestUsageRecorderAllocatesNothing(t *testing.T) {
	var u usageRecorder
	start := time.Now()
	if n := testing.AllocsPerRun(1000, func() {
		end := time.Now()
		u.served(start, end)
		u.token(end)
		u.refusal(end)
		u.cause(store.CauseFairShare, end)
	}); n != 0 {
		t.Errorf("%v allocations per request", n)
	}
}

// A flush takes the minutes past, each as its own minute, and leaves the
// current one; a count that lands in a slot after its flush took it goes
// with the slot's next flush; the last flush takes everything.
func TestUsageRecorderMinutes(t *testing.T) {
	var u usageRecorder
	at := func(min, sec int) time.Time {
		return minute0.Add(time.Duration(min)*time.Minute + time.Duration(sec)*time.Second)
	}
	u.served(at(0, 10), at(0, 10).Add(3*time.Millisecond))
	u.served(at(0, 50), at(0, 59).Add(time.Second/2))
	u.token(at(0, 20))
	u.served(at(1, 1), at(1, 2))
	got := u.drain(at(1, 30), false)
	if len(got) != 1 || !got[0].Minute.Equal(at(0, 0)) || got[0].Requests() != 2 || got[0].Tokens != 1 {
		t.Fatalf("flush in minute 1: %+v", got)
	}
	if p := got[0].Latency.Quantile(1); p < 8*time.Second || p > 10*time.Second {
		t.Errorf("the slower request took %v, want about 9.5s", p)
	}
	// A request that read the clock in minute 0 counts now: the next
	// flush takes it, in its minute.
	u.refusal(at(0, 59))
	if got := u.drain(at(1, 40), false); len(got) != 1 || got[0].Refused != 1 || !got[0].Minute.Equal(at(0, 0)) {
		t.Errorf("a second flush in minute 1: %+v", got)
	}
	u.served(at(2, 5), at(2, 5))
	if got = u.drain(at(3, 0), false); len(got) != 2 || got[0].Requests()+got[1].Requests() != 2 {
		t.Fatalf("flush in minute 3: %+v", got)
	}
	u.served(at(3, 1), at(3, 1))
	if got := u.drain(at(3, 2), true); len(got) != 1 || got[0].Requests() != 1 {
		t.Errorf("the last flush: %+v", got)
	}
	if !u.lastActive().Equal(at(3, 1)) {
		t.Errorf("last active %v", u.lastActive())
	}
}

// Requests through Serve, and the refusals the school reports to its
// Observer, are in its usage — counted for the metrics as well — and in
// the store after a flush, where a school built again on the store (a
// restart) finds them.
func TestUsageServed(t *testing.T) {
	ts := newTestSite(t)
	ctx := context.Background()
	allowed := httptest.NewRequest("POST", "/account/graphql", nil)
	allowed.Header.Set("Authorization", "Bearer "+ts.token)
	ts.serve(t, allowed)
	ts.serve(t, httptest.NewRequest("POST", "/account/graphql", nil)) // no token: 401
	ts.serve(t, httptest.NewRequest("GET", "/somewhere", nil))        // the legacy site's
	u, err := ts.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := u.Window(5*time.Minute, time.Now())
	if w.Requests() != 3 || w.Refused != 1 || u.LastActive.IsZero() {
		t.Errorf("usage before a flush: %d requests, %d refused, last active %v", w.Requests(), w.Refused, u.LastActive)
	}
	if ts.observed.counts["protected allowed"] != 1 || ts.observed.counts["protected invalid_token"] != 1 {
		t.Errorf("the metrics' observer got %v", ts.observed.counts)
	}
	if stored, _ := ts.store.LoadUsage(ctx); len(stored.Buckets) != 0 {
		t.Fatalf("stored on the request path: %+v", stored)
	}
	if err := ts.FlushUsage(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := New(ctx, testConfig(ts.store))
	if err != nil {
		t.Fatal(err)
	}
	u, err = again.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w := u.Window(time.Hour, time.Now()); w.Requests() != 3 || w.Refused != 1 || u.LastActive.IsZero() {
		t.Errorf("usage after a restart: %d requests, %d refused, last active %v", w.Requests(), w.Refused, u.LastActive)
	}
}

// The Observer's calls are sorted into tokens, refusals and causes.
func TestUsageObserver(t *testing.T) {
	var u usageRecorder
	o := &usageObserver{Observer: nopObserver{}, u: &u, now: func() time.Time { return minute0 }}
	o.TokenIssued("authorization_code")
	o.Refused("token", "invalid_grant")
	o.Refused("token", codeRateLimited)
	o.Refused("token", codeUnavailable)
	o.ProtectedOutcome("allowed")
	o.ProtectedOutcome("invalid_token")
	o.ProtectedOutcome(codeUnavailable)
	o.MCPCaller("anonymous")
	o.MCPCaller("refused")
	o.MCPCaller(callerUnavailable)
	got := u.drain(minute0.Add(time.Minute), true)
	if len(got) != 1 {
		t.Fatalf("%+v", got)
	}
	d := got[0]
	if d.Tokens != 1 || d.Refused != 3 || d.Causes[store.CauseRateLimited] != 1 || d.Causes[store.CauseStoreUnavailable] != 3 {
		t.Errorf("tokens %d, refused %d, causes %v", d.Tokens, d.Refused, d.Causes)
	}
}

// failingUsage is a store whose usage writes fail while down is set.
type failingUsage struct {
	store.Store
	down  atomic.Bool
	calls atomic.Int32
}

func (f *failingUsage) AddUsage(ctx context.Context, d []store.UsageDelta) error {
	f.calls.Add(1)
	if f.down.Load() {
		return errors.New("the database is down")
	}
	return f.Store.AddUsage(ctx, d)
}

// Counts a failing store did not take are kept and stored once it takes
// them, once; the view shows them meanwhile.
func TestUsageFlushRetried(t *testing.T) {
	fs := &failingUsage{}
	ts := newTestSite(t, func(c *Config) { fs.Store = c.Store; c.Store = fs })
	ctx := context.Background()
	fs.down.Store(true)
	for range 3 {
		ts.serve(t, httptest.NewRequest("GET", "/", nil))
	}
	if err := ts.FlushUsage(ctx); err == nil {
		t.Fatal("a failed flush reported success")
	}
	ts.serve(t, httptest.NewRequest("GET", "/", nil))
	if u, err := ts.Usage(ctx); err != nil {
		t.Fatal(err)
	} else if w := u.Window(time.Hour, time.Now()); w.Requests() != 4 {
		t.Errorf("the view while the store fails writes: %d requests", w.Requests())
	}
	fs.down.Store(false)
	for range 2 {
		if err := ts.FlushUsage(ctx); err != nil {
			t.Fatal(err)
		}
	}
	u, err := fs.Store.LoadUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w := u.Window(time.Hour, time.Now()); w.Requests() != 4 {
		t.Errorf("stored after the failure: %d requests", w.Requests())
	}
	// Nothing new: the next flush writes nothing.
	calls := fs.calls.Load()
	if err := ts.FlushUsage(ctx); err != nil || fs.calls.Load() != calls {
		t.Errorf("a flush with nothing to store wrote (%v)", err)
	}
}

// The minute's flush says a failure, but not one because the school is
// let go of: its counts are stored by FlushUsage then.
func TestUsageJobQuietWhenLetGo(t *testing.T) {
	fs := &failingUsage{}
	var logged bytes.Buffer
	ts := newTestSite(t, func(c *Config) {
		fs.Store = c.Store
		c.Store = fs
		c.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	})
	fs.down.Store(true)
	ts.serve(t, httptest.NewRequest("GET", "/", nil))
	letGo, cancel := context.WithCancel(context.Background())
	cancel()
	ts.usageJob(letGo)
	if strings.Contains(logged.String(), "storing the school's usage failed") {
		t.Errorf("a flush cut short by the let-go warned: %s", logged.String())
	}
	ts.usageJob(context.Background())
	if !strings.Contains(logged.String(), "storing the school's usage failed") {
		t.Errorf("a failed flush said nothing: %q", logged.String())
	}
}

// A long failure keeps at most usageCarryMax minutes, the oldest added
// to the next.
func TestUsageCarryBounded(t *testing.T) {
	var ds []store.UsageDelta
	for m := range usageCarryMax + 5 {
		d := store.UsageDelta{Minute: minute0.Add(time.Duration(m) * time.Minute)}
		d.Latency[0] = 1
		ds = append(ds, d)
	}
	kept := carryAtMost(ds, usageCarryMax)
	var n uint64
	for _, d := range kept {
		n += d.Requests()
	}
	if len(kept) != usageCarryMax || n != usageCarryMax+5 {
		t.Errorf("%d minutes with %d requests kept", len(kept), n)
	}
}

// BenchmarkUsageServed is the recorder's cost per request, on one school
// from every processor at once: the counts alone (counts), and with the
// two clock reads Serve adds (with-clock).
func BenchmarkUsageServed(b *testing.B) {
	b.Run("counts", func(b *testing.B) {
		var u usageRecorder
		start := time.Now()
		end := start.Add(3 * time.Millisecond)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				u.served(start, end)
			}
		})
	})
	b.Run("with-clock", func(b *testing.B) {
		var u usageRecorder
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				start := time.Now()
				u.served(start, time.Now())
			}
		})
	})
}

// BenchmarkUsageFlush is the cost of a school's minute flush to its
// bbolt file: taking the counts out of memory and adding them to the
// minute's and the hour's buckets, synced.
func BenchmarkUsageFlush(b *testing.B) {
	ts := newTestSite(b)
	ctx := context.Background()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	b.ReportAllocs()
	for b.Loop() {
		for range 10 {
			ts.serve(b, r)
		}
		if err := ts.FlushUsage(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
