package pgstore

import (
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// TestClaimRun: one claim per site, job and period, whichever instance
// asks.
func TestClaimRun(t *testing.T) {
	dsn := pgcluster.Database(t)
	ctx := testContext(t)
	a, b := openSite(t, dsn), openSite(t, dsn)
	other, err := connect(t, dsn).Site(ctx, "https://other.example", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	claim := func(s *Site, job string, period time.Duration) bool {
		t.Helper()
		mine, err := s.ClaimRun(ctx, job, period)
		if err != nil {
			t.Fatal(err)
		}
		return mine
	}
	if !claim(a, "janitor", time.Hour) {
		t.Error("the first claim was refused")
	}
	if claim(b, "janitor", time.Hour) || claim(a, "janitor", time.Hour) {
		t.Error("a second claim within the period was granted")
	}
	if !claim(b, "catalog", time.Hour) {
		t.Error("another job's first claim was refused")
	}
	if !claim(other, "janitor", time.Hour) {
		t.Error("another site's first claim was refused")
	}
	const short = 200 * time.Millisecond
	if !claim(a, "tick", short) || claim(b, "tick", short) {
		t.Fatal("a short job's first period went wrong")
	}
	time.Sleep(short)
	if !claim(b, "tick", short) {
		t.Error("the claim of the next period was refused")
	}
}
