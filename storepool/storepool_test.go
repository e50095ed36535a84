package storepool

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
	if lockWait() != lockTimeout {
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
	if _, err := Bolt(path); !errors.Is(err, boltstore.ErrLocked) {
		t.Fatalf("a held file: %v", err)
	}
	if at := lockTimedOut.Load(); at == nil || !at.After(earlier) {
		t.Fatal("the timeout is recorded")
	}
	old := time.Now().Add(-2 * time.Minute)
	lockTimedOut.Store(&old)
	if lockWait() != lockTimeout {
		t.Fatal("a timeout long ago no longer shortens the wait")
	}
}

// A database one school could not reach is tried briefly by the next
// schools for a minute, and waited for in full again after that or once
// a school reached it.
func TestConnectWait(t *testing.T) {
	const dsn = "host=/nowhere dbname=connect-wait-test"
	t.Cleanup(func() { unreachable.Delete(dsn) })
	if got := ConnectWait(dsn); got != ConnectTimeout {
		t.Fatalf("a database never tried: %v, want %v", got, ConnectTimeout)
	}
	unreachable.Store(dsn, time.Now())
	if got := ConnectWait(dsn); got != quickConnect {
		t.Fatalf("just found unreachable: %v, want %v", got, quickConnect)
	}
	unreachable.Store(dsn, time.Now().Add(-2*time.Minute))
	if got := ConnectWait(dsn); got != ConnectTimeout {
		t.Fatalf("found unreachable long ago: %v, want %v", got, ConnectTimeout)
	}
	if got := ConnectWait("host=/elsewhere"); got != ConnectTimeout {
		t.Fatalf("another database: %v", got)
	}
}

// Holders of one key share its value, opened once and ended by the last
// to let go; a value that fails to open is held by nobody, and the next
// asker opens it again.
func TestShared(t *testing.T) {
	var s shared[*int]
	opens, ends := 0, 0
	open := func() (*int, error) { opens++; v := opens; return &v, nil }
	end := func(*int) error { ends++; return nil }
	a, _ := s.acquire("k", open)
	b, _ := s.acquire("k", open)
	if a != b || opens != 1 {
		t.Fatalf("two holders: %p %p, %d opens", a, b, opens)
	}
	if n, ok := s.holders("k"); !ok || n != 2 {
		t.Fatalf("holders = %d, %v", n, ok)
	}
	_ = s.release("k", end)
	if ends != 0 {
		t.Fatal("ended with a holder left")
	}
	_ = s.release("k", end)
	if _, ok := s.holders("k"); ok || ends != 1 {
		t.Fatalf("after the last: held %v, %d ends", ok, ends)
	}
	failing := errors.New("no")
	if _, err := s.acquire("f", func() (*int, error) { return nil, failing }); err != failing {
		t.Fatalf("a failed open: %v", err)
	}
	if _, ok := s.holders("f"); ok {
		t.Fatal("a failed open is held")
	}
	if v, err := s.acquire("f", open); err != nil || v == nil {
		t.Fatalf("opened again: %v", err)
	}
}
