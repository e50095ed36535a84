package pgstore

import (
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// Site is the store of one site (one school, one issuer) in a shared
// database. It implements store.Store, store.Scheduler and
// store.Watcher (listen.go).
type Site struct {
	pool   *Pool
	id     int64 // sites.id: every row of the site carries it, and notifications name it
	issuer string
	keys   cipher.AEAD // seals the private signing keys
	// opened is the site's version (sites.version) when it was opened,
	// before anything of it was read: a change after it moves the
	// version past it, which is how a watcher that starts later learns
	// of changes it missed (Watch).
	opened int64
}

var (
	_ store.Store     = (*Site)(nil)
	_ store.Scheduler = (*Site)(nil)
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
// row on first use. The issuer must be in its one spelling
// (policy.ParseOrigin), so that a site has one row whatever spelling its
// configuration used; a row an earlier version made under another
// spelling fails the open, naming both (see otherSpellings). keySecret
// seals the private signing keys; a secret that does not open the keys
// already stored fails here, before anything could make keys of its own,
// and an empty one is refused.
func (p *Pool) Site(ctx context.Context, issuer string, keySecret string) (*Site, error) {
	if issuer == "" {
		return nil, errors.New("pgstore: a site needs its issuer")
	}
	if origin, err := policy.ParseOrigin(issuer); err != nil {
		return nil, fmt.Errorf("pgstore: site issuer: %v", err)
	} else if origin != issuer {
		return nil, fmt.Errorf("pgstore: site %s: the issuer must be in its one spelling, %s", issuer, origin)
	}
	if keySecret == "" {
		return nil, fmt.Errorf("pgstore: site %s: the key secret is empty; it encrypts the signing keys in the database", issuer)
	}
	s := &Site{pool: p, issuer: issuer, keys: newSealer(keySecret)}
	// Opening the stored keys is the check of the secret: a wrong one
	// fails now, not at the first token, and before InitKeys could store
	// a key sealed with it beside the others.
	err := retry(ctx, "opening site "+issuer, callTimeout, func(ctx context.Context) (err error) {
		if err := otherSpellings(ctx, p.db, issuer); err != nil {
			return err
		}
		if s.id, s.opened, err = siteID(ctx, p.db, issuer); err != nil {
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

// siteID returns the id of the issuer's row, inserting it if need be,
// and its version. The lookup is a statement of its own: under READ
// COMMITTED it sees a row that a concurrent first start committed while
// the insert waited on it.
func siteID(ctx context.Context, q querier, issuer string) (id, version int64, err error) {
	err = q.QueryRow(ctx, `INSERT INTO sites (issuer) VALUES ($1) ON CONFLICT (issuer) DO NOTHING RETURNING id, version`,
		issuer).Scan(&id, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		err = q.QueryRow(ctx, `SELECT id, version FROM sites WHERE issuer = $1`, issuer).Scan(&id, &version)
	}
	return id, version, err
}

// otherSpellings refuses to open a site while the database has a row of
// another spelling of its issuer. Earlier versions stored the issuer as
// written (https://School.Example:443): creating the row of the one
// spelling beside it would start the school again, empty, with new keys
// and none of its clients, and say nothing. Which row is the school's is
// the operator's call, so nothing is renamed here.
func otherSpellings(ctx context.Context, q querier, issuer string) error {
	// lower() and LIKE narrow the rows to those starting like the issuer
	// in ASCII; ParseOrigin decides.
	rows, err := q.Query(ctx, `SELECT issuer FROM sites WHERE issuer <> $1 AND lower(issuer) LIKE $2`,
		issuer, likePrefix(issuer))
	if err != nil {
		return err
	}
	written, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	var others []string
	for _, w := range written {
		if origin, err := policy.ParseOrigin(w); err == nil && origin == issuer {
			others = append(others, w)
		}
	}
	if len(others) == 0 {
		return nil
	}
	var own bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sites WHERE issuer = $1)`, issuer).Scan(&own); err != nil {
		return err
	}
	list := strings.Join(others, ", ")
	if !own && len(others) == 1 {
		return fmt.Errorf("the database keeps this school under %s, another spelling of its issuer that an earlier "+
			"version stored as written: rename that row's issuer to %s (docs/operator.md shows how)", list, issuer)
	}
	if own {
		list = issuer + ", " + list
	}
	return fmt.Errorf("the database has a site row for each of %s, spellings of one issuer (earlier versions stored "+
		"the issuer as written): decide which is the school's, delete the others (deleting a row deletes all it holds) "+
		"and rename the one kept to %s", list, issuer)
}

// likePrefix is a LIKE pattern of the strings that start with s's ASCII
// prefix.
func likePrefix(s string) string {
	if i := strings.IndexFunc(s, func(r rune) bool { return r >= utf8.RuneSelf }); i >= 0 {
		s = s[:i]
	}
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s) + "%"
}

// Close does nothing: the Pool is shared by the sites that name its DSN,
// and the adapter closes it once none uses it.
func (s *Site) Close() error { return nil }

// run runs fn on the pool, for calls that are a single statement and so a
// transaction of their own.
func (s *Site) run(ctx context.Context, op string, fn func(context.Context, querier) error) error {
	return retry(ctx, op, callTimeout, func(ctx context.Context) error {
		defer s.pool.charge(ctx, time.Now())
		return fn(ctx, s.pool.db)
	})
}

// tx runs fn in a transaction, committed when fn returns nil, which also
// stores the audit events recorded on ctx (audit.go): every caller writes.
func (s *Site) tx(ctx context.Context, op string, fn func(context.Context, pgx.Tx) error) error {
	return s.txAudit(ctx, op, func(ctx context.Context, tx pgx.Tx, _ *store.AuditTx) error { return fn(ctx, tx) })
}

// txFor is tx with a deadline and transaction options of its own.
func (s *Site) txFor(ctx context.Context, op string, limit time.Duration, opts pgx.TxOptions, fn func(context.Context, pgx.Tx) error) error {
	return s.pool.txFor(ctx, op, limit, opts, fn)
}

// txFor runs fn in a transaction on the pool, committed when fn returns
// nil, retried as retry says.
func (p *Pool) txFor(ctx context.Context, op string, limit time.Duration, opts pgx.TxOptions, fn func(context.Context, pgx.Tx) error) error {
	return retry(ctx, op, limit, func(ctx context.Context) error {
		tx, err := p.db.BeginTx(ctx, opts)
		if err != nil {
			return err
		}
		defer p.charge(ctx, time.Now())
		// After a commit the rollback does nothing; after an error its own
		// error says less than fn's. Past the deadline, pgx closes the
		// connection instead, which rolls back just as well.
		defer func() { _ = tx.Rollback(ctx) }()
		if err := fn(ctx, tx); err != nil {
			return err
		}
		return commitTraced(ctx, tx)
	})
}

// notFound turns "no row" into the contract's ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}
