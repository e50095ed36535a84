package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

// TestDatabaseRestart: while the database is down, calls fail promptly
// with an error that is none of the contract's answers (so callers say
// 503, not "no"); once it is back, the same pool works again, its dead
// connections replaced.
func TestDatabaseRestart(t *testing.T) {
	dsn := pgcluster.Database(t)
	s := openSite(t, dsn)
	ctx := context.Background()
	if err := s.PutSetting(ctx, "switch", []byte("on")); err != nil {
		t.Fatal(err)
	}
	c := pgcluster.Shared(t)
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			c.Resume()
		}
	}()
	start := time.Now()
	_, err := s.GetSetting(ctx, "switch")
	if err == nil || errors.Is(err, store.ErrNotFound) || time.Since(start) > callTimeout+time.Second {
		t.Errorf("GetSetting with the database down = %v after %v, want a failure within %v", err, time.Since(start), callTimeout)
	}
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	if v, err := s.GetSetting(ctx, "switch"); err != nil || string(v) != "on" {
		t.Errorf("GetSetting after the restart = %q, %v", v, err)
	}
}
