package pgstore

import (
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// Two instances on one database count each other within a beat; one
// that closes is no longer counted by the other.
func TestInstances(t *testing.T) {
	dsn := pgcluster.Database(t)
	a, b := connect(t, dsn), connect(t, dsn)
	countA := a.Instances()
	if n := countA(); n != 1 {
		t.Fatalf("before the first count: %d, want 1", n)
	}
	countB := b.Instances()
	waitCount(t, countA, 2)
	waitCount(t, countB, 2)
	b.Close()
	waitCount(t, countA, 1)
}

// waitCount waits for count to give want, within a few beats.
func waitCount(t *testing.T, count func() int, want int) {
	t.Helper()
	deadline := time.Now().Add(3*beatEvery + 5*time.Second)
	for count() != want {
		if time.Now().After(deadline) {
			t.Fatalf("counted %d instances, want %d", count(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
