// Package storepool shares the stores of the running schools between the
// configs that have them: a bbolt file is opened once however many
// configs hold its school, a PostgreSQL pool once per database. Caddy
// starts a new config before it ends the old one, and a second open of a
// bbolt file would wait on its lock for ever. Plain Go: the adapter opens
// its schools' stores through it.
package storepool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/pgstore"
	"github.com/schoolgate/schoolgate/store"
)

// files holds each school's bbolt file open, by its path.
var files shared[store.Store]

// databases holds one PostgreSQL pool per DSN (resolved), shared by the
// schools and registries that name it.
var databases shared[*pgstore.Pool]

// lockTimeout bounds the wait for a file lock held by another process:
// one that is ending (a restart's overlap) lets go within it.
const lockTimeout = 5 * time.Second

// lockTimedOut is when a wait for a file lock last timed out. A process
// that holds one school's file likely holds them all (a second Caddy on
// the same data): after one timeout, the next schools check their lock
// once instead of waiting, so that a thousand schools take seconds, not
// hours, to be found locked.
var lockTimedOut atomic.Pointer[time.Time]

// lockWait is how long to wait for a school's file lock.
func lockWait() time.Duration {
	if t := lockTimedOut.Load(); t != nil && time.Since(*t) < time.Minute {
		return time.Millisecond
	}
	return lockTimeout
}

// CheckLocksOnce makes the next opens check a file's lock once instead
// of waiting for it, as after a wait that timed out; restore undoes it.
// For tests.
func CheckLocksOnce() (restore func()) {
	prev := lockTimedOut.Load()
	now := time.Now()
	lockTimedOut.Store(&now)
	return func() { lockTimedOut.Store(prev) }
}

// Bolt returns the bbolt file at path, opening it if no school holds it
// yet. Each Bolt that succeeds is matched by a ReleaseBolt.
func Bolt(path string) (store.Store, error) {
	return files.acquire(path, func() (store.Store, error) {
		s, err := boltstore.Open(path, lockWait())
		if errors.Is(err, boltstore.ErrLocked) {
			now := time.Now()
			lockTimedOut.Store(&now)
		}
		if err != nil {
			return nil, err
		}
		return s, nil
	})
}

// ReleaseBolt lets go of the file at path, closing it once nobody holds
// it.
func ReleaseBolt(path string) error {
	return files.release(path, func(s store.Store) error { return s.Close() })
}

// BoltHolders is how many hold the file at path; false when it is not
// open here.
func BoltHolders(path string) (int, bool) { return files.holders(path) }

// ConnectTimeout bounds opening a database at start: the pool itself
// waits about 15 s for an unreachable one, and migrations take a moment.
const ConnectTimeout = 30 * time.Second

// quickConnect is the connection attempt to a database found unreachable
// within the last minute: enough for one that came back.
const quickConnect = 2 * time.Second

// unreachable holds when each database (by resolved DSN) last could not be
// connected to. The schools of one database share its fate: after one of
// them waited out the connection window, the others (at the same start,
// or rebuilding) try briefly instead of waiting the window each, so that
// a hundred schools on a database that is down start in seconds, not in
// 25 minutes, and their rebuilds do not hold the scheduler's workers.
var unreachable sync.Map // string → time.Time

// ConnectWait bounds opening the database at dsn.
func ConnectWait(dsn string) time.Duration {
	if v, ok := unreachable.Load(dsn); ok && time.Since(v.(time.Time)) < time.Minute {
		return quickConnect
	}
	return ConnectTimeout
}

// Postgres returns the pool of dsn (a resolved DSN), connecting it if no
// school or registry uses it yet, and how to let go of it.
func Postgres(ctx context.Context, dsn string) (*pgstore.Pool, func() error, error) {
	p, err := databases.acquire(dsn, func() (*pgstore.Pool, error) {
		p, err := pgstore.Connect(ctx, dsn)
		if err != nil {
			unreachable.Store(dsn, time.Now())
			return nil, err
		}
		unreachable.Delete(dsn)
		return p, nil
	})
	if err != nil {
		return nil, nil, err
	}
	release := func() error {
		return databases.release(dsn, func(p *pgstore.Pool) error { p.Close(); return nil })
	}
	return p, release, nil
}

// PostgresHolders is how many hold the pool of dsn; false when it is not
// open here.
func PostgresHolders(dsn string) (int, bool) { return databases.holders(dsn) }
