package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

// TestPoolLoadUsage: a school's usage reads by its issuer without opening
// its site, and a school never started has none (and gets no sites row).
func TestPoolLoadUsage(t *testing.T) {
	ctx := testContext(t)
	dsn := pgcluster.Database(t)
	s := openSite(t, dsn)
	at := time.Date(2026, 11, 23, 10, 0, 30, 0, time.UTC)
	d := store.UsageDelta{Minute: at.Truncate(time.Minute), LastActive: at}
	d.Latency[store.LatencyBin(time.Millisecond)] = 3
	if err := s.AddUsage(ctx, []store.UsageDelta{d}); err != nil {
		t.Fatal(err)
	}
	u, err := s.pool.LoadUsage(ctx, s.issuer)
	if err != nil || len(u.Buckets) != 2 || u.Buckets[0].Requests() != 3 || !u.LastActive.Equal(at) {
		t.Fatalf("usage by issuer: %+v, %v", u, err)
	}
	u, err = s.pool.LoadUsage(ctx, "https://never.example")
	if err != nil || len(u.Buckets) != 0 || !u.LastActive.IsZero() {
		t.Errorf("a school never started: %+v, %v", u, err)
	}
	var n int
	if err := s.pool.db.QueryRow(ctx, `SELECT count(*) FROM sites WHERE issuer = 'https://never.example'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("reading its usage made %d sites rows (%v)", n, err)
	}
}

// BenchmarkAddUsage measures a school's minute flush to PostgreSQL: a
// minute of a busy school's counts (requests over twenty latency bins,
// tokens, refusals, two causes) added to its minute's row and its hour's,
// its last activity raised and the rows past keeping purged, in one round
// trip; each flush a minute later than the last, so that the hour's row
// is updated and a minute's row made.
func BenchmarkAddUsage(b *testing.B) {
	ctx := context.Background()
	s := benchSite(b)
	minute := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	d := store.UsageDelta{}
	for i := range 20 {
		d.Latency[30+i] = uint64(100 * (i + 1))
	}
	d.Tokens, d.Refused = 40, 12
	d.Causes[store.CauseRateLimited], d.Causes[store.CauseLegacyTimeout] = 3, 1
	b.ReportAllocs()
	for b.Loop() {
		minute = minute.Add(time.Minute)
		d.Minute, d.LastActive = minute, minute.Add(59*time.Second)
		if err := s.AddUsage(ctx, []store.UsageDelta{d}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadUsage measures reading a busy school's kept usage (90
// minute rows, 25 hour rows), what the admin API and page read.
func BenchmarkLoadUsage(b *testing.B) {
	ctx := context.Background()
	s := benchSite(b)
	minute := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	var ds []store.UsageDelta
	for m := range 25 * 60 {
		d := store.UsageDelta{Minute: minute.Add(time.Duration(m) * time.Minute)}
		for i := range 20 {
			d.Latency[30+i] = uint64(i + 1)
		}
		ds = append(ds, d)
	}
	if err := s.AddUsage(ctx, ds); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		u, err := s.LoadUsage(ctx)
		if err != nil || len(u.Buckets) != 91+25 {
			b.Fatalf("%d buckets, %v", len(u.Buckets), err)
		}
	}
}

// benchSite is a site on a fresh database, for a benchmark.
func benchSite(b *testing.B) *Site {
	ctx := context.Background()
	p, err := Connect(ctx, pgcluster.Database(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	s, err := p.Site(ctx, testIssuer, testSecret)
	if err != nil {
		b.Fatal(err)
	}
	return s
}
