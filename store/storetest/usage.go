package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// usageDelta is n requests of 2 ms in the minute of at, with a token, a
// refusal and a cause for each, last active at at.
func usageDelta(at time.Time, n uint64) store.UsageDelta {
	d := store.UsageDelta{Minute: at.Truncate(time.Minute), LastActive: at}
	d.Latency[store.LatencyBin(2*time.Millisecond)] = n
	d.Latency[store.LatencyBin(300*time.Millisecond)] = n
	d.Tokens, d.Refused = n, n
	d.Causes[store.CauseRateLimited] = n
	d.Causes[store.CauseLegacyTimeout] = n
	return d
}

// bucketKey names a bucket and what it holds, for comparing.
type bucketKey struct {
	span                                  time.Duration
	start                                 string
	requests, tokens, refused, rate, slow uint64
}

func bucketKeys(u *store.Usage) []bucketKey {
	var out []bucketKey
	for _, b := range u.Buckets {
		out = append(out, bucketKey{b.Span, b.Start.UTC().Format(time.RFC3339), b.Requests(), b.Tokens, b.Refused,
			b.Causes[store.CauseRateLimited], b.Latency[store.LatencyBin(300*time.Millisecond)]})
	}
	return out
}

func loadUsage(t *testing.T, s store.Store) *store.Usage {
	t.Helper()
	u, err := s.LoadUsage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// testUsageAdds: counts add up in their minute's bucket and their hour's;
// a school never active has neither buckets nor a last activity.
func testUsageAdds(t *testing.T, s store.Store) {
	ctx := context.Background()
	if u := loadUsage(t, s); len(u.Buckets) != 0 || !u.LastActive.IsZero() {
		t.Fatalf("a new school's usage: %+v", u)
	}
	m := epoch.Add(59 * time.Minute)
	if err := s.AddUsage(ctx, []store.UsageDelta{usageDelta(m, 1), usageDelta(m.Add(time.Minute), 2)}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUsage(ctx, []store.UsageDelta{usageDelta(m.Add(20*time.Second), 3)}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUsage(ctx, nil); err != nil {
		t.Fatalf("adding nothing: %v", err)
	}
	u := loadUsage(t, s)
	want := []bucketKey{
		{store.UsageMinute, "2026-11-23T10:59:00Z", 8, 4, 4, 4, 4},
		{store.UsageMinute, "2026-11-23T11:00:00Z", 4, 2, 2, 2, 2},
		{store.UsageHour, "2026-11-23T10:00:00Z", 8, 4, 4, 4, 4},
		{store.UsageHour, "2026-11-23T11:00:00Z", 4, 2, 2, 2, 2},
	}
	if got := bucketKeys(u); !slices.Equal(got, want) {
		t.Errorf("buckets\n%v\nwant\n%v", got, want)
	}
	b := u.Buckets[0]
	if b.Causes[store.CauseLegacyTimeout] != 4 || b.Latency.Count() != 8 || b.Start.Location() != time.UTC {
		t.Errorf("bucket %+v", b)
	}
	if !u.LastActive.Equal(m.Add(time.Minute)) {
		t.Errorf("last active %v, want %v", u.LastActive, m.Add(time.Minute))
	}
	w := u.Window(time.Hour, m.Add(time.Minute))
	if w.Requests() != 12 || w.Latency.Quantile(0.5) > 3*time.Millisecond || w.Latency.Quantile(0.99) < 250*time.Millisecond {
		t.Errorf("the last hour: %d requests, p50 %v, p99 %v", w.Requests(), w.Latency.Quantile(0.5), w.Latency.Quantile(0.99))
	}
}

// testUsageRetention: an addition deletes the buckets older than kept,
// counted back from its latest minute, and adds nothing older than that.
func testUsageRetention(t *testing.T, s store.Store) {
	ctx := context.Background()
	var early []store.UsageDelta
	for h := range 30 {
		early = append(early, usageDelta(epoch.Add(time.Duration(h)*time.Hour), 1))
	}
	if err := s.AddUsage(ctx, early); err != nil {
		t.Fatal(err)
	}
	now := epoch.Add(30 * time.Hour)
	if err := s.AddUsage(ctx, []store.UsageDelta{usageDelta(now, 1), usageDelta(now.Add(-2*time.Hour), 1)}); err != nil {
		t.Fatal(err)
	}
	u := loadUsage(t, s)
	keepMinutes, keepHours := now.Add(-store.UsageMinutesKept), now.Add(-store.UsageHoursKept)
	var minutes, hours int
	for _, b := range u.Buckets {
		switch {
		case b.Span == store.UsageMinute && b.Start.Before(keepMinutes), b.Span == store.UsageHour && b.Start.Before(keepHours):
			t.Errorf("a %v bucket of %v is kept past its retention", b.Span, b.Start)
		case b.Span == store.UsageMinute:
			minutes++
		default:
			hours++
		}
	}
	// The minutes of an hour ago and now (the one of two hours ago is
	// past keeping); the hours from 25 hours ago to now, the one two
	// hours ago holding two.
	if minutes != 2 || hours != 26 {
		t.Errorf("%d minute and %d hour buckets kept, want 2 and 26:\n%v", minutes, hours, bucketKeys(u))
	}
	if w := u.Window(24*time.Hour, now); w.Requests() != 2*(24+1) {
		t.Errorf("the last day: %d requests, want %d", w.Requests(), 2*(24+1))
	}
}

// testUsageLastActive: the last activity only moves forward, and an
// addition of nothing but it keeps it.
func testUsageLastActive(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := epoch.Add(90 * time.Second)
	if err := s.AddUsage(ctx, []store.UsageDelta{{Minute: epoch, LastActive: at}}); err != nil {
		t.Fatal(err)
	}
	if u := loadUsage(t, s); !u.LastActive.Equal(at) || len(u.Buckets) != 0 {
		t.Fatalf("usage %+v, want last active %v and no bucket", u, at)
	}
	if err := s.AddUsage(ctx, []store.UsageDelta{usageDelta(epoch, 1)}); err != nil {
		t.Fatal(err)
	}
	if u := loadUsage(t, s); !u.LastActive.Equal(at) {
		t.Errorf("last active went back to %v from %v", u.LastActive, at)
	}
}

// testUsageAddedByBoth: two instances adding to the same buckets at once
// make one sum, each count once.
func testUsageAddedByBoth(t *testing.T, a, b store.Store) {
	const n = 16
	errs := make([]error, n)
	race(n, a, b, func(i int, s store.Store) {
		m := epoch.Add(time.Duration(i%3) * time.Minute)
		errs[i] = s.AddUsage(context.Background(), []store.UsageDelta{usageDelta(m, 1), usageDelta(m.Add(time.Hour), 1)})
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("addition %d: %v", i, err)
		}
	}
	for _, s := range []store.Store{a, b} {
		u := loadUsage(t, s)
		var minutes, hours uint64
		for _, bk := range u.Buckets {
			if bk.Span == store.UsageMinute {
				minutes += bk.Requests()
			} else {
				hours += bk.Requests()
			}
		}
		if minutes != 4*n || hours != 4*n {
			t.Errorf("%d requests in minute buckets and %d in hour buckets, want %d each: %s",
				minutes, hours, 4*n, fmt.Sprint(bucketKeys(u)))
		}
	}
}
