package store

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Every duration falls in a bin whose bounds hold it, and the bins are
// contiguous and in order.
func TestLatencyBins(t *testing.T) {
	prevHigh := 0.0
	for i := range LatencyBins {
		low, high := latencyBounds(i)
		if low != prevHigh || high <= low {
			t.Fatalf("bin %d is [%v, %v), after a bin ending at %v", i, low, high, prevHigh)
		}
		if i >= 4 && (high-low)/low > 0.25 {
			t.Errorf("bin %d is %.1f %% wide", i, 100*(high-low)/low)
		}
		prevHigh = high
	}
	for _, d := range []time.Duration{-time.Second, 0, 999 * time.Nanosecond, time.Microsecond, 3 * time.Microsecond,
		4 * time.Microsecond, 7 * time.Microsecond, 8 * time.Microsecond, 1234 * time.Microsecond,
		time.Second, 7 * time.Minute, time.Hour} {
		i := LatencyBin(d)
		low, high := latencyBounds(i)
		us := float64(max(d, 0).Microseconds())
		if i < LatencyBins-1 && (us < low || us >= high) || i == LatencyBins-1 && us < low {
			t.Errorf("%v: bin %d is [%v, %v) µs", d, i, low, high)
		}
	}
	if LatencyBin(time.Hour) != LatencyBins-1 {
		t.Errorf("an hour is in bin %d, not the top one", LatencyBin(time.Hour))
	}
}

// A quantile read from the histogram is within 12.5 % of the exact one,
// for samples spread over six orders of magnitude.
func TestLatencyQuantileBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		var h Latency
		samples := make([]time.Duration, 1000+round*97)
		for i := range samples {
			// log-uniform from 10 µs to 10 s
			samples[i] = time.Duration(10e3 * math.Pow(10, rng.Float64()*6))
			h[LatencyBin(samples[i])]++
		}
		slices.Sort(samples)
		for _, q := range []float64{0.5, 0.9, 0.99, 1} {
			rank := int(math.Ceil(q * float64(len(samples))))
			exact := samples[rank-1]
			got := h.Quantile(q)
			if err := float64(got-exact) / float64(exact); err > 0.125 || err < -0.125 {
				t.Errorf("round %d q=%v: %v, exact %v (%.1f %%)", round, q, got, exact, 100*err)
			}
		}
	}
	var empty Latency
	if empty.Quantile(0.5) != 0 {
		t.Error("an empty histogram has a median")
	}
}

// Two instances' histograms merged give the quantiles of all their
// requests together.
func TestLatencyMerge(t *testing.T) {
	var a, b Latency
	for range 99 {
		a[LatencyBin(time.Millisecond)]++
	}
	for range 1 {
		b[LatencyBin(time.Second)]++
	}
	a.Add(&b)
	if a.Count() != 100 {
		t.Fatalf("count %d", a.Count())
	}
	if p := a.Quantile(0.99); p < 875*time.Microsecond || p > 1125*time.Microsecond {
		t.Errorf("p99 %v, want about 1ms", p)
	}
	if p := a.Quantile(1); p < 875*time.Millisecond || p > 1125*time.Millisecond {
		t.Errorf("max %v, want about 1s", p)
	}
}

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func counts(requests int, d time.Duration) UsageCounts {
	var c UsageCounts
	c.Latency[LatencyBin(d)] = uint64(requests)
	return c
}

// A delta goes to its minute and its hour; deltas of one minute merge;
// the buckets come ordered; what is older than kept is not added.
func TestPlanUsage(t *testing.T) {
	c := counts(2, time.Millisecond)
	c.Tokens = 1
	c.Causes[CauseFairShare] = 3
	p := PlanUsage([]UsageDelta{
		{Minute: t0.Add(59*time.Minute + 10*time.Second), UsageCounts: c, LastActive: t0.Add(59 * time.Minute)},
		{Minute: t0.Add(time.Hour), UsageCounts: c},
		{Minute: t0.Add(59 * time.Minute), UsageCounts: c, LastActive: t0.Add(time.Hour + time.Second)},
		{Minute: t0.Add(-2 * time.Hour), UsageCounts: c},
		{Minute: t0.Add(time.Hour), LastActive: t0}, // nothing counted
	})
	type key struct {
		span  time.Duration
		start time.Time
		reqs  uint64
	}
	var got []key
	for _, b := range p.Buckets {
		got = append(got, key{b.Span, b.Start, b.Requests()})
	}
	want := []key{
		{UsageMinute, t0.Add(59 * time.Minute), 4},
		{UsageMinute, t0.Add(time.Hour), 2},
		{UsageHour, t0.Add(-2 * time.Hour), 2},
		{UsageHour, t0, 4},
		{UsageHour, t0.Add(time.Hour), 2},
	}
	if !slices.Equal(got, want) {
		t.Errorf("buckets\n%v\nwant\n%v", got, want)
	}
	if b := p.Buckets[0]; b.Tokens != 2 || b.Causes[CauseFairShare] != 6 {
		t.Errorf("minute bucket %+v", b)
	}
	if !p.LastActive.Equal(t0.Add(time.Hour + time.Second)) {
		t.Errorf("last active %v", p.LastActive)
	}
	if !p.KeepMinutesFrom.Equal(t0.Add(time.Hour-UsageMinutesKept)) || !p.KeepHoursFrom.Equal(t0.Add(time.Hour-UsageHoursKept)) {
		t.Errorf("keep from %v, %v", p.KeepMinutesFrom, p.KeepHoursFrom)
	}
	if p := PlanUsage(nil); len(p.Buckets) != 0 || !p.LastActive.IsZero() {
		t.Errorf("nothing planned %+v", p)
	}
}

// A window counts its buckets: the one now is in and those that start
// less than its length before that one ends.
func TestUsageWindow(t *testing.T) {
	var u Usage
	var ds []UsageDelta
	for m := range 120 { // one request a minute, for two hours
		ds = append(ds, UsageDelta{Minute: t0.Add(time.Duration(m) * time.Minute), UsageCounts: counts(1, time.Millisecond)})
	}
	u.Add(ds)
	now := t0.Add(119*time.Minute + 30*time.Second)
	for _, c := range []struct {
		w    time.Duration
		want uint64
		from time.Time
	}{
		{5 * time.Minute, 5, t0.Add(115 * time.Minute)},
		{time.Hour, 60, t0.Add(60 * time.Minute)},
		{24 * time.Hour, 120, t0.Add(time.Hour - 23*time.Hour)},
	} {
		got := u.Window(c.w, now)
		if got.Requests() != c.want || !got.From.Equal(c.from) {
			t.Errorf("%v: %d requests from %v, want %d from %v", c.w, got.Requests(), got.From, c.want, c.from)
		}
	}
	// An hour later nothing is in the last 5 minutes or the last hour.
	if got := u.Window(time.Hour, now.Add(time.Hour)); got.Requests() != 0 {
		t.Errorf("an hour later, %d requests in the last hour", got.Requests())
	}
}

// The stored form keeps what it is given, drops what it does not know,
// and leaves zeros out.
func TestUsageStored(t *testing.T) {
	c := counts(3, 40*time.Millisecond)
	c.Refused, c.Causes[CauseLegacyTimeout] = 2, 1
	s := c.Stored()
	if len(s.Causes) != 1 || s.Causes["legacy_timeout"] != 1 || len(s.Latency) != 1 {
		t.Errorf("stored %+v", s)
	}
	s.Causes["from_a_newer_build"] = 5
	s.Latency["999"] = 5
	if back := s.Counts(); back != c {
		t.Errorf("read back %+v, want %+v", back, c)
	}
	if c.StatusTotal(504) != 1 || c.StatusTotal(503) != 0 {
		t.Errorf("status totals %d %d", c.StatusTotal(504), c.StatusTotal(503))
	}
	for _, st := range CauseStatuses {
		n := 0
		for k := range NumCauses {
			if k.Status() == st {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no cause answers %d", st)
		}
	}
}
