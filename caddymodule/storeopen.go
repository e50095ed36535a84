package caddymodule

import (
	"context"
	"fmt"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/store"
	"github.com/schoolgate/schoolgate/storepool"
)

// storeCallTimeout bounds a store call made on behalf of no request.
const storeCallTimeout = 5 * time.Second

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
	s, err := storepool.Bolt(path)
	if err != nil {
		return nil, fmt.Errorf("data: %v", err)
	}
	return &siteStore{Store: s, where: path, release: func() error { return storepool.ReleaseBolt(path) }}, nil
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
	ctx, cancel := context.WithTimeout(ctx, storepool.ConnectWait(dsn))
	defer cancel()
	pool, release, err := storepool.Postgres(ctx, dsn)
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
	pool, release, err := storepool.Postgres(ctx, dsn)
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
	pool, release, err := storepool.Postgres(ctx, dsn)
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
