package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/pgstore"
	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/storepool"
)

// registries holds each registry open across config reloads, as the
// stores are: a reload that keeps the platform does not open its
// registry twice.
var registries = caddy.NewUsagePool()

type pooledRegistry struct {
	reg   registry.Registry
	place placement
	// after lets go of what the registry stands on (a database pool).
	after func() error
}

// Destruct closes the registry once no config uses it.
func (p pooledRegistry) Destruct() error {
	err := p.reg.Close()
	if p.after != nil {
		err = errors.Join(err, p.after())
	}
	return err
}

// open opens the registry, or finds it opened by another config. cc is
// the config's context, for the registry's logger.
func (r PlatformRegistry) open(ctx context.Context, cc caddy.Context) (*openedRegistry, error) {
	var key string
	var build func() (caddy.Destructor, error)
	if pg := r.Postgres; pg != nil {
		dsn, _, err := pg.resolvedAs("registry postgres")
		if err != nil {
			return nil, err
		}
		key = "postgres " + dsn
		build = func() (caddy.Destructor, error) { return openPostgresRegistry(ctx, pg, dsn) }
	} else {
		key = r.key() // one Dir per directory, however it is written
		build = func() (caddy.Destructor, error) {
			// A new platform starts from an empty registry, as a school
			// starts from an empty data directory: both are created.
			if err := os.MkdirAll(r.Dir, 0o700); err != nil {
				return nil, fmt.Errorf("registry dir: %v", err)
			}
			d, err := registry.OpenDirSnapshot(r.Dir, validateDirRecord, cc.Slogger())
			if err != nil {
				return nil, fmt.Errorf("registry dir: %v", err)
			}
			return pooledRegistry{reg: d, place: placeInDir(d.DataDir)}, nil
		}
	}
	v, _, err := registries.LoadOrNew(key, build)
	if err != nil {
		return nil, err
	}
	pr := v.(pooledRegistry)
	return &openedRegistry{Registry: pr.reg, place: pr.place, release: func() error {
		_, err := registries.Delete(key)
		return err
	}}, nil
}

// openPostgresRegistry opens the registry in the database at dsn (pg's
// DSN resolved), on the pool the schools' stores share.
func openPostgresRegistry(ctx context.Context, pg *PostgresStore, dsn string) (caddy.Destructor, error) {
	ctx, cancel := context.WithTimeout(ctx, storepool.ConnectWait(dsn))
	defer cancel()
	pool, release, err := storepool.Postgres(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("registry postgres: %v", err)
	}
	reg, err := pgstore.OpenRegistry(ctx, pool, validatePostgresRecord)
	if err != nil {
		_ = release()
		return nil, fmt.Errorf("registry postgres: %v", err)
	}
	return pooledRegistry{reg: reg, place: placeInPostgres(pg), after: release}, nil
}
