package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/pgstore"
	"github.com/schoolgate/schoolgate/store"
)

// stores holds each site's bbolt file open across config reloads. Caddy
// starts a new config before cleaning up the old one, and a second
// bolt.Open of the same file would wait on its lock forever; sharing the
// handle through a usage pool (as Caddy's acme_server does) avoids that.
var stores = caddy.NewUsagePool()

// pools holds one PostgreSQL pool per DSN, shared by the sites that name
// it and kept across reloads like the bbolt files.
var pools = caddy.NewUsagePool()

// storeLockTimeout bounds the wait for a file lock held by another
// process: one that is ending (a restart's overlap) lets go within it.
const storeLockTimeout = 5 * time.Second

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
	return storeLockTimeout
}

// storeCallTimeout bounds a store call made on behalf of no request.
const storeCallTimeout = 5 * time.Second

// connectTimeout bounds opening a database at start: the pool itself
// waits about 15 s for an unreachable one, and migrations take a moment.
const connectTimeout = 30 * time.Second

// unreachable holds when each database (by resolved DSN) last could not be
// connected to. The schools of one database share its fate: after one of
// them waited out the connection window, the others (at the same start,
// or rebuilding) try briefly instead of waiting the window each, so that
// a hundred schools on a database that is down start in seconds, not in
// 25 minutes, and their rebuilds do not hold the scheduler's workers.
var unreachable sync.Map // string → time.Time

// connectWait bounds opening the database at dsn.
func connectWait(dsn string) time.Duration {
	if v, ok := unreachable.Load(dsn); ok && time.Since(v.(time.Time)) < time.Minute {
		return quickConnect
	}
	return connectTimeout
}

// quickConnect is the connection attempt to a database found unreachable
// within the last minute: enough for one that came back.
const quickConnect = 2 * time.Second

// siteStore is a site's store and how to let go of it.
type siteStore struct {
	store.Store
	// where names the store in status reports and messages: the bbolt
	// file's path, or "postgres".
	where   string
	release func() error
	// instances counts the instances sharing the store's database, among
	// which the school's budget is divided; nil for a bbolt file, which
	// one instance has.
	instances func() int
}

// openStore opens the store g names (see storeKinds), or the bbolt file.
func (g *Gateway) openStore(ctx context.Context) (*siteStore, error) {
	if opts := g.Store.options(); opts != nil {
		return opts.open(ctx, g.Issuer)
	}
	if g.Data == "" {
		if err := g.prepareDefaultDir(); err != nil {
			return nil, err
		}
	}
	path := g.dataPath()
	s, err := acquireBolt(path)
	if err != nil {
		return nil, fmt.Errorf("data: %v", err)
	}
	return &siteStore{Store: s, where: path, release: func() error { return releaseBolt(path) }}, nil
}

type pooledStore struct{ store.Store }

// Destruct closes the file once no config uses it.
func (p pooledStore) Destruct() error { return p.Close() }

func acquireBolt(path string) (store.Store, error) {
	v, _, err := stores.LoadOrNew(path, func() (caddy.Destructor, error) {
		s, err := boltstore.Open(path, lockWait())
		if errors.Is(err, boltstore.ErrLocked) {
			now := time.Now()
			lockTimedOut.Store(&now)
		}
		if err != nil {
			return nil, err
		}
		return pooledStore{s}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(pooledStore).Store, nil
}

func releaseBolt(path string) error {
	_, err := stores.Delete(path)
	return err
}

type pooledDB struct{ *pgstore.Pool }

// Destruct closes the pool once no config uses it.
func (p pooledDB) Destruct() error {
	p.Close()
	return nil
}

// open opens the issuer's site on the pool of its DSN (see openPostgres).
func (pg *PostgresStore) open(ctx context.Context, issuer string) (*siteStore, error) {
	return openPostgres(ctx, pg, issuer)
}

// openPostgres opens the issuer's site on the pool of its DSN. The key is
// the resolved DSN, which stays in this process's memory only.
func openPostgres(ctx context.Context, cfg *PostgresStore, issuer string) (*siteStore, error) {
	dsn, secret, err := cfg.resolved()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, connectWait(dsn))
	defer cancel()
	pool, release, err := acquirePool(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("store postgres: %v", err)
	}
	site, err := pool.Site(ctx, issuer, secret)
	if err != nil {
		_ = release()
		return nil, fmt.Errorf("store postgres: %v", err)
	}
	return &siteStore{Store: site, where: "postgres", release: release, instances: pool.Instances()}, nil
}

// loadUsage reads the issuer's usage on the pool of its DSN, without
// the key secret (usageapi.go).
func (pg *PostgresStore) loadUsage(ctx context.Context, issuer string) (*store.Usage, error) {
	dsn, _, err := pg.resolvedAs("store postgres")
	if err != nil {
		return nil, err
	}
	pool, release, err := acquirePool(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("store postgres: %v", err)
	}
	defer func() { _ = release() }()
	return pool.LoadUsage(ctx, issuer)
}

// readRows reads the issuer's rows on the pool of its DSN, without the
// key secret and without making a row for a school never started
// (storedread.go).
func (pg *PostgresStore) readRows(ctx context.Context, issuer string) (authserver.DoctorSource, func(), error) {
	dsn, _, err := pg.resolvedAs("store postgres")
	if err != nil {
		return nil, nil, err
	}
	pool, release, err := acquirePool(ctx, dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("store postgres: %v", err)
	}
	rows, err := pool.SiteRows(ctx, issuer)
	if err != nil {
		_ = release()
		return nil, nil, err
	}
	return rows, func() { _ = release() }, nil
}

// acquirePool returns the pool of dsn (a resolved DSN), connecting it if
// no site or registry uses it yet, and how to let go of it.
func acquirePool(ctx context.Context, dsn string) (*pgstore.Pool, func() error, error) {
	v, _, err := pools.LoadOrNew(dsn, func() (caddy.Destructor, error) {
		p, err := pgstore.Connect(ctx, dsn)
		if err != nil {
			unreachable.Store(dsn, time.Now())
			return nil, err
		}
		unreachable.Delete(dsn)
		return pooledDB{p}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	release := func() error {
		_, err := pools.Delete(dsn)
		return err
	}
	return v.(pooledDB).Pool, release, nil
}
