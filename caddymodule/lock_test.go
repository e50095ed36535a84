package caddymodule

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/boltstore"
)

// Once a school's file was found locked, the next schools check their
// lock once instead of waiting out the timeout each.
func TestLockedFilesAfterTheFirst(t *testing.T) {
	prev := lockTimedOut.Load()
	t.Cleanup(func() { lockTimedOut.Store(prev) })
	lockTimedOut.Store(nil)
	if lockWait() != storeLockTimeout {
		t.Fatal("the first locked file is waited for")
	}
	path := filepath.Join(t.TempDir(), "school.db")
	holder, err := boltstore.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()

	earlier := time.Now().Add(-time.Second)
	lockTimedOut.Store(&earlier)
	if lockWait() != time.Millisecond {
		t.Fatal("after a timeout, a lock is checked once")
	}
	if _, err := acquireBolt(path); !errors.Is(err, boltstore.ErrLocked) {
		t.Fatalf("a held file: %v", err)
	}
	if at := lockTimedOut.Load(); at == nil || !at.After(earlier) {
		t.Fatal("the timeout is recorded")
	}
	old := time.Now().Add(-2 * time.Minute)
	lockTimedOut.Store(&old)
	if lockWait() != storeLockTimeout {
		t.Fatal("a timeout long ago no longer shortens the wait")
	}
}
