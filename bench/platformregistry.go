package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/pgstore"
	"github.com/schoolgate/schoolgate/registry"
)

// benchRegistry is the bench's own handle on a registry, and the
// Caddyfile's line for it.
type benchRegistry struct {
	registry.Registry
	line    string
	stop    func()
	written time.Duration // writing the n records before the start
}

// openRegistry writes the n schools' records to a registry of kind under
// base (for postgres, in a durable PostgreSQL server of its own) and opens
// the bench's own handle on it.
func (p *platformRun) openRegistry(kind, base string) (*benchRegistry, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	switch kind {
	case "dir":
		path := filepath.Join(base, "registry")
		began := time.Now()
		if err := p.populateDir(base, path, quiet); err != nil {
			return nil, err
		}
		written := time.Since(began)
		d, err := registry.OpenDir(path, nil, quiet)
		if err != nil {
			return nil, err
		}
		return &benchRegistry{Registry: d, line: "registry dir " + path, stop: func() { _ = d.Close() }, written: written}, nil
	case "postgres":
		return openPostgresRegistry(p.populatePostgres)
	}
	return nil, fmt.Errorf("unknown registry %q (dir, postgres)", kind)
}

// openPostgresRegistry starts a durable PostgreSQL server of the bench's
// own, opens a registry in a database of it, fills it with populate (timed:
// written) and returns the bench's handle, whose stop closes the registry
// and stops the server.
func openPostgresRegistry(populate func(registry.Registry) error) (*benchRegistry, error) {
	if _, err := pgcluster.BinDir(); err != nil {
		return nil, fmt.Errorf("the postgres registry needs PostgreSQL's server binaries (apt-get install postgresql): %v", err)
	}
	c, err := pgcluster.Start(pgcluster.Options{Durable: true})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, err := c.CreateDatabase(ctx, "platform")
	if err == nil {
		var pool *pgstore.Pool
		if pool, err = pgstore.Connect(ctx, dsn); err == nil {
			var reg *pgstore.Registry
			if reg, err = pgstore.OpenRegistry(ctx, pool, nil); err == nil {
				line := fmt.Sprintf("registry postgres %q {\n\t\t\tkey_secret bench-key-secret\n\t\t}", dsn)
				r := &benchRegistry{Registry: reg, line: line, stop: func() { _ = reg.Close(); pool.Close(); _ = c.Stop() }}
				began := time.Now()
				if err = populate(reg); err == nil {
					r.written = time.Since(began)
					return r, nil
				}
				_ = reg.Close()
			}
			pool.Close()
		}
	}
	_ = c.Stop()
	return nil, err
}

// populatePostgres writes the records of schools s0 … s(n-1), 16 at a
// time, the last school's last.
func (p *platformRun) populatePostgres(reg registry.Registry) error {
	n := p.cfg.schools
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := forEach(ctx, n-1, 16, func(ctx context.Context, i int) error {
		_, err := reg.Put(ctx, p.record(schoolName(i), nil, ""))
		return err
	}); err != nil {
		return err
	}
	_, err := reg.Put(ctx, p.record(schoolName(n-1), nil, ""))
	return err
}

// populateDir writes the n schools' files into path as a deploy tool
// would before the platform starts: each file written whole (as Put
// spells it: version 1, updated now), one sync of the directory at the
// end. Put itself, with its two fsyncs a file, would take most of an
// hour for 100,000 schools on a disk whose fsync takes 10 ms.
func (p *platformRun) populateDir(_, path string, _ *slog.Logger) error {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return err
	}
	now := time.Now().UTC()
	for i := range p.cfg.schools {
		rec := p.record(schoolName(i), nil, "")
		rec.Version, rec.UpdatedAt = 1, now
		data, err := json.MarshalIndent(rec, "", "\t")
		if err != nil {
			return err
		}
		// Put's file name: the issuer's host, ':' made '_'.
		name := strings.ReplaceAll(p.host(schoolName(i)), ":", "_") + ".json"
		if err := os.WriteFile(filepath.Join(path, name), append(data, '\n'), 0o600); err != nil {
			return err
		}
	}
	return syncDir(path)
}

// syncDir makes the renames into dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
