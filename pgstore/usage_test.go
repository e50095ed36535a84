package pgstore

import (
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
