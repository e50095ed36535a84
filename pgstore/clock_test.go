package pgstore

import (
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// TestClockSkew: on one host the database's clock is this one.
func TestClockSkew(t *testing.T) {
	s := openSite(t, pgcluster.Database(t))
	skew, err := s.ClockSkew(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if skew < -time.Second || skew > time.Second {
		t.Errorf("skew against a database on the same host = %v", skew)
	}
}
