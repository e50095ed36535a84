package pgstore

import (
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/schoolgate/schoolgate/authserver"
)

// Site is the store of one site (one school, one issuer) in a shared
// database. It implements authserver.Store, authserver.Scheduler and
// authserver.Watcher (listen.go).
type Site struct {
	pool   *Pool
	id     int64 // sites.id: every row of the site carries it, and notifications name it
	issuer string
	keys   cipher.AEAD // seals the private signing keys
}

var (
	_ authserver.Store     = (*Site)(nil)
	_ authserver.Scheduler = (*Site)(nil)
)

// querier is what a statement runs on: the pool, for a statement that is
// a transaction by itself, or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Site returns the store of the site with this issuer, creating its sites
// row on first use. keySecret seals the private signing keys; a secret
// that does not open the keys already stored fails here, before anything
// could make keys of its own, and an empty one is refused.
func (p *Pool) Site(ctx context.Context, issuer string, keySecret string) (*Site, error) {
	if issuer == "" {
		return nil, errors.New("pgstore: a site needs its issuer")
	}
	if keySecret == "" {
		return nil, fmt.Errorf("pgstore: site %s: the key secret is empty; it encrypts the signing keys in the database", issuer)
	}
	s := &Site{pool: p, issuer: issuer, keys: newSealer(keySecret)}
	// Opening the stored keys is the check of the secret: a wrong one
	// fails now, not at the first token, and before InitKeys could store
	// a key sealed with it beside the others.
	err := retry(ctx, "opening site "+issuer, callTimeout, func(ctx context.Context) (err error) {
		if s.id, err = siteID(ctx, p.db, issuer); err != nil {
			return err
		}
		_, err = s.loadKeys(ctx, p.db)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// siteID returns the id of the issuer's row, inserting it if need be. The
// lookup is a statement of its own: under READ COMMITTED it sees a row
// that a concurrent first start committed while the insert waited on it.
func siteID(ctx context.Context, q querier, issuer string) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `INSERT INTO sites (issuer) VALUES ($1) ON CONFLICT (issuer) DO NOTHING RETURNING id`, issuer).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		err = q.QueryRow(ctx, `SELECT id FROM sites WHERE issuer = $1`, issuer).Scan(&id)
	}
	return id, err
}

// Close does nothing: the Pool is shared by the sites that name its DSN,
// and the adapter closes it once none uses it.
func (s *Site) Close() error { return nil }

// run runs fn on the pool, for calls that are a single statement and so a
// transaction of their own.
func (s *Site) run(ctx context.Context, op string, fn func(context.Context, querier) error) error {
	return retry(ctx, op, callTimeout, func(ctx context.Context) error { return fn(ctx, s.pool.db) })
}

// tx runs fn in a transaction, committed when fn returns nil.
func (s *Site) tx(ctx context.Context, op string, fn func(context.Context, pgx.Tx) error) error {
	return s.txFor(ctx, op, callTimeout, pgx.TxOptions{}, fn)
}

// txFor is tx with a deadline and transaction options of its own.
func (s *Site) txFor(ctx context.Context, op string, limit time.Duration, opts pgx.TxOptions, fn func(context.Context, pgx.Tx) error) error {
	return retry(ctx, op, limit, func(ctx context.Context) error {
		tx, err := s.pool.db.BeginTx(ctx, opts)
		if err != nil {
			return err
		}
		// After a commit the rollback does nothing; after an error its own
		// error says less than fn's. Past the deadline, pgx closes the
		// connection instead, which rolls back just as well.
		defer func() { _ = tx.Rollback(ctx) }()
		if err := fn(ctx, tx); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
}

// notFound turns "no row" into the contract's ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return authserver.ErrNotFound
	}
	return err
}
