package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/registry"
)

// Registry is the registry.Registry of a platform's schools in the
// database (migration 004): the table schools, one row per record, and
// school_hosts, one row per host, whose primary key makes each host one
// school's whichever instances write at once. A write and its
// announcement (NOTIFY on registryChannel) commit together; the pool's
// listening connection delivers it to every instance's watchers, and
// the pool's version check (every 30 seconds) finds what a dropped
// connection lost. Write the rows through Put and Remove only: a row
// changed by hand in SQL is neither checked nor announced.
type Registry struct {
	pool     *Pool
	validate registry.Validator
	// listed is the size of the last listing.
	listed atomic.Int64

	mu    sync.Mutex
	stops map[int]func() // the watches to stop at Close
	next  int
}

var (
	_ registry.Registry    = (*Registry)(nil)
	_ registry.Conditional = (*Registry)(nil)
)

// registryChannel is the channel the registry's writes are announced on,
// with the payload "<registry version>:<issuer>": the registry's version
// after the write, so that the poll knows the listener has seen it.
const registryChannel = "schoolgate_registry"

// OpenRegistry returns the school registry of the pool's database,
// checking configurations with validate (nil: nothing beyond
// Record.Check). It fails if the database cannot be read. Close stops its
// watches; the pool stays open.
func OpenRegistry(ctx context.Context, p *Pool, validate registry.Validator) (*Registry, error) {
	err := retry(ctx, "opening the school registry", callTimeout, func(ctx context.Context) error {
		var v int64
		return p.db.QueryRow(ctx, `SELECT version FROM schools_version`).Scan(&v)
	})
	if err != nil {
		return nil, err
	}
	return &Registry{pool: p, validate: validate, stops: map[int]func(){}}, nil
}

// schoolColumns are a record's columns, in scanSchool's order.
const schoolColumns = `issuer, hosts, disabled, config::text, version, updated_at`

// scanSchool reads a row of schoolColumns.
// The configuration is scanned as bytes: one copy out of the row, no
// string in between.
func scanSchool(row pgx.CollectableRow) (registry.Record, error) {
	var r registry.Record
	var config []byte
	if err := row.Scan(&r.Issuer, &r.Hosts, &r.Disabled, &config, &r.Version, &r.UpdatedAt); err != nil {
		return registry.Record{}, err
	}
	if len(r.Hosts) == 0 {
		r.Hosts = nil
	}
	r.Config = json.RawMessage(config)
	r.UpdatedAt = r.UpdatedAt.UTC()
	return r, nil
}

// List implements registry.Registry.
func (r *Registry) List(ctx context.Context) ([]registry.Record, error) {
	var out []registry.Record
	err := retry(ctx, "listing the schools", callTimeout, func(ctx context.Context) error {
		rows, err := r.pool.db.Query(ctx, `SELECT `+schoolColumns+` FROM schools`)
		if err != nil {
			return err
		}
		// Made to the last listing's size: 100,000 records grown
		// by appending are copied about twenty times.
		out, err = pgx.AppendRows(make([]registry.Record, 0, r.listed.Load()), rows, scanSchool)
		if err == nil {
			r.listed.Store(int64(len(out)))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Get implements registry.Registry.
func (r *Registry) Get(ctx context.Context, issuer string) (registry.Record, error) {
	if err := ctx.Err(); err != nil {
		return registry.Record{}, err
	}
	key, err := policy.ParseOrigin(issuer)
	if err != nil {
		return registry.Record{}, registry.ErrNotFound
	}
	var out registry.Record
	err = retry(ctx, "reading the school "+key, callTimeout, func(ctx context.Context) error {
		rows, err := r.pool.db.Query(ctx, `SELECT `+schoolColumns+` FROM schools WHERE issuer = $1`, key)
		if err != nil {
			return err
		}
		out, err = pgx.CollectExactlyOneRow(rows, scanSchool)
		if errors.Is(err, pgx.ErrNoRows) {
			return callbackError{registry.ErrNotFound}
		}
		return err
	})
	if err != nil {
		return registry.Record{}, err
	}
	return out, nil
}

// Put implements registry.Registry. The record's row, its hosts and the
// announcement are one transaction: a host another school has fails the
// insert of the hosts, and the whole write is rolled back.
func (r *Registry) Put(ctx context.Context, rec registry.Record) (registry.Record, error) {
	return r.put(ctx, rec, nil)
}

// PutIf implements registry.Conditional: the version is read with the
// row locked in the writing transaction, and a record that must be new
// is inserted only if no other transaction inserted it first.
func (r *Registry) PutIf(ctx context.Context, rec registry.Record, version int64) (registry.Record, error) {
	return r.put(ctx, rec, &version)
}

// put is Put, on condition of the stored version when version is set.
func (r *Registry) put(ctx context.Context, rec registry.Record, version *int64) (registry.Record, error) {
	if err := ctx.Err(); err != nil {
		return registry.Record{}, err
	}
	rec.Hosts = slices.Clone(rec.Hosts)
	if err := rec.Check(); err != nil {
		return registry.Record{}, err
	}
	if r.validate != nil {
		if err := r.validate(&rec); err != nil {
			return registry.Record{}, err
		}
	}
	hosts := rec.Hosts
	if hosts == nil {
		hosts = []string{} // text[] NOT NULL
	}
	err := r.pool.txFor(ctx, "writing the school "+rec.Issuer, callTimeout, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		if version != nil {
			if err := lockedVersion(ctx, tx, rec.Issuer, *version, false); err != nil {
				return err
			}
		}
		// The time is taken once the row is locked, so a replacement is
		// never older than the record it replaces.
		upsert := `ON CONFLICT (issuer) DO UPDATE SET hosts = excluded.hosts, disabled = excluded.disabled,
				config = excluded.config, version = schools.version + 1, updated_at = clock_timestamp()`
		if version != nil && *version == 0 {
			upsert = `ON CONFLICT (issuer) DO NOTHING` // inserted meanwhile: no row returned
		}
		err := tx.QueryRow(ctx, `INSERT INTO schools (issuer, hosts, disabled, config, version, updated_at)
			VALUES ($1, $2, $3, $4::json, 1, clock_timestamp()) `+upsert+`
			RETURNING version, updated_at`, rec.Issuer, hosts, rec.Disabled, string(rec.Config)).Scan(&rec.Version, &rec.UpdatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			// Another transaction inserted the school first: its row is
			// seen by the next statement.
			var stored int64
			if err := tx.QueryRow(ctx, `SELECT version FROM schools WHERE issuer = $1`, rec.Issuer).Scan(&stored); err != nil {
				return err
			}
			return callbackError{&registry.VersionError{Issuer: rec.Issuer, Stored: stored, Exists: true}}
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM school_hosts WHERE issuer = $1`, rec.Issuer); err != nil {
			return err
		}
		if err := claimHosts(ctx, tx, rec.Issuer, rec.HostKeys()); err != nil {
			return err
		}
		return announceSchool(ctx, tx, rec.Issuer)
	})
	if err != nil {
		return registry.Record{}, err
	}
	rec.UpdatedAt = rec.UpdatedAt.UTC()
	return rec, nil
}

// lockedVersion checks a conditional write's version against the
// school's row, locked until the transaction ends; a mismatch is a
// *registry.VersionError in a callbackError, and no row when removing
// is registry.ErrNotFound.
func lockedVersion(ctx context.Context, tx pgx.Tx, issuer string, version int64, removing bool) error {
	var stored int64
	err := tx.QueryRow(ctx, `SELECT version FROM schools WHERE issuer = $1 FOR UPDATE`, issuer).Scan(&stored)
	exists := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if exists && version == stored && version > 0 || !exists && version == 0 {
		return nil
	}
	if !exists && removing {
		return callbackError{registry.ErrNotFound}
	}
	return callbackError{&registry.VersionError{Issuer: issuer, Want: version, Stored: stored, Exists: exists}}
}

// errHostReleased: the insert of a host failed on another school's row,
// which was gone when its owner was looked up; trying again finds the
// host free. The code makes retry do so.
var errHostReleased = &pgconn.PgError{Code: "40001", Message: "a host another school held was released meanwhile"}

// claimHosts inserts the school's hosts in byte order, one order for
// every writer, so that two never wait on each other's hosts crosswise.
// A host that is another school's is a unique violation: rolled back to a
// savepoint, the owner is read in the same transaction and the first
// such host of hosts (the issuer's, then the aliases) named.
func claimHosts(ctx context.Context, tx pgx.Tx, issuer string, hosts []string) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	_, err = sp.Exec(ctx, `INSERT INTO school_hosts (host, issuer)
		SELECT h, $2 FROM unnest($1::text[]) AS h ORDER BY h COLLATE "C"`, hosts, issuer)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		if err != nil {
			return err
		}
		return sp.Commit(ctx)
	}
	if err := sp.Rollback(ctx); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT host, issuer FROM school_hosts WHERE host = ANY($1) AND issuer <> $2`, hosts, issuer)
	if err != nil {
		return err
	}
	owners := map[string]string{}
	var host, owner string
	if _, err := pgx.ForEachRow(rows, []any{&host, &owner}, func() error { owners[host] = owner; return nil }); err != nil {
		return err
	}
	for _, h := range hosts {
		if o, ok := owners[h]; ok {
			return callbackError{&registry.HostTakenError{Host: h, Owner: o}}
		}
	}
	return errHostReleased
}

// announceSchool tells every instance, in the transaction that writes or
// removes the school's record, that it changed: the notification is
// delivered on commit and never for a rollback. The version bump lets an
// instance that missed notifications notice that it did.
func announceSchool(ctx context.Context, q querier, issuer string) error {
	_, err := q.Exec(ctx, `WITH v AS (UPDATE schools_version SET version = version + 1 RETURNING version)
		SELECT pg_notify($1::text, v.version::text || ':' || $2::text) FROM v`, registryChannel, issuer)
	return err
}

// Remove implements registry.Registry. The school's data (its sites row)
// is kept.
func (r *Registry) Remove(ctx context.Context, issuer string) error {
	return r.remove(ctx, issuer, nil)
}

// RemoveIf implements registry.Conditional.
func (r *Registry) RemoveIf(ctx context.Context, issuer string, version int64) error {
	return r.remove(ctx, issuer, &version)
}

// remove is Remove, on condition of the stored version when version is
// set.
func (r *Registry) remove(ctx context.Context, issuer string, version *int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	key, err := policy.ParseOrigin(issuer)
	if err != nil {
		return registry.ErrNotFound
	}
	return r.pool.txFor(ctx, "removing the school "+key, callTimeout, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		if version != nil {
			if err := lockedVersion(ctx, tx, key, *version, true); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, `DELETE FROM schools WHERE issuer = $1`, key)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return callbackError{registry.ErrNotFound}
		}
		return announceSchool(ctx, tx, key)
	})
}

// Watch implements registry.Registry. The first watch of a pool starts
// its listening connection; until it listens, writes are announced as
// Change{} (read everything) when it does.
//
// It returns once the pool listens for the announcements (or after
// callTimeout, if the database does not answer): the change naming none
// that the listening's start announces then reaches fn before Watch
// returns, so that a listing made after it has every change it stands
// for, and a platform starting does not read the registry twice.
func (r *Registry) Watch(fn func(registry.Change)) (stop func()) {
	unwatch := r.pool.hub.addSchools(fn)
	wait := time.NewTimer(callTimeout)
	select {
	case <-r.pool.hub.listening:
	case <-wait.C:
	}
	wait.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	id := r.next
	r.stops[id] = unwatch
	return func() {
		unwatch()
		r.mu.Lock()
		delete(r.stops, id)
		r.mu.Unlock()
	}
}

// Close stops the registry's watches. The pool stays open: its sites and
// other registries use it.
func (r *Registry) Close() error {
	r.mu.Lock()
	stops := r.stops
	r.stops = map[int]func(){}
	r.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	return nil
}

// schoolWatchers are the registry's watchers of one pool's hub, and the
// registry's version they last heard of.
type schoolWatchers struct {
	fns     map[int]func(registry.Change)
	version int64
	known   bool // version was read or heard
}

// addSchools registers a registry watcher, starting the hub with its
// first watcher.
func (h *hub) addSchools(fn func(registry.Change)) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.schools.fns == nil {
		h.schools.fns = map[int]func(registry.Change){}
	}
	h.next++
	id := h.next
	h.schools.fns[id] = fn
	h.start()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.schools.fns, id)
			h.mu.Unlock()
		})
	}
}

// sendSchools delivers c to the registry's watchers, one call at a time
// with every other watcher of the hub.
func (h *hub) sendSchools(c registry.Change) {
	h.mu.Lock()
	fns := make([]func(registry.Change), 0, len(h.schools.fns))
	for _, fn := range h.schools.fns {
		fns = append(fns, fn)
	}
	h.mu.Unlock()
	if len(fns) == 0 {
		return
	}
	h.deliver.Lock()
	defer h.deliver.Unlock()
	for _, fn := range fns {
		fn(c)
	}
}

// schoolNotice delivers a notification of registryChannel. A payload that
// announceSchool did not send is ignored.
func (h *hub) schoolNotice(payload string) {
	v, issuer, ok := strings.Cut(payload, ":")
	version, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil || issuer == "" {
		return
	}
	h.mu.Lock()
	h.schools.version, h.schools.known = max(h.schools.version, version), true
	h.mu.Unlock()
	h.sendSchools(registry.Change{Issuer: issuer})
}

// staleSchools reports whether the registry's version moved past the
// last heard of while it has watchers.
func (h *hub) staleSchools(ctx context.Context) bool {
	h.mu.Lock()
	watched := len(h.schools.fns) > 0
	h.mu.Unlock()
	if !watched {
		return false
	}
	qctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var v int64
	if err := h.db.QueryRow(qctx, `SELECT version FROM schools_version`).Scan(&v); err != nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	moved := h.schools.known && v > h.schools.version
	h.schools.version, h.schools.known = max(h.schools.version, v), true
	return moved
}
