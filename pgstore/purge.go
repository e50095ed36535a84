package pgstore

import (
	"context"
	"time"
)

// purgeBatch is how many rows (grants, with their tokens, in the last
// step) one purge transaction deletes: small enough that the locks it
// holds and the WAL it writes never stall the token endpoint, large enough
// that a day's expired tokens go in a few round trips.
const purgeBatch = 1000

// The purge's statements, each deleting at most purgeBatch rows of the
// site ($1) that expired before $2 and returning how many.
var purgeExpired = []struct{ what, sql string }{
	{"codes", `DELETE FROM codes WHERE site_id = $1 AND hash IN
		(SELECT hash FROM codes WHERE site_id = $1 AND expires_at < $2 LIMIT $3)`},
	{"pending requests", `DELETE FROM pending WHERE site_id = $1 AND id IN
		(SELECT id FROM pending WHERE site_id = $1 AND expires_at < $2 LIMIT $3)`},
	{"tokens", `DELETE FROM tokens WHERE site_id = $1 AND hash IN
		(SELECT hash FROM tokens WHERE site_id = $1 AND expires_at < $2 LIMIT $3)`},
}

// purgeGrants deletes grants that are revoked or have no token left, with
// their tokens, in one statement so that a batch is whole. Grants that
// another transaction holds (a rotation or a revocation in progress) are
// left for the next pass rather than waited for: the purge is never in a
// hurry, and the token endpoint always is.
const purgeGrants = `WITH dead AS (
		SELECT id FROM grants g WHERE g.site_id = $1 AND (g.revoked_at IS NOT NULL
			OR NOT EXISTS (SELECT 1 FROM tokens t WHERE t.site_id = $1 AND t.grant_id = g.id))
		LIMIT $2 FOR UPDATE OF g SKIP LOCKED
	), tokens_gone AS (
		DELETE FROM tokens t USING dead WHERE t.site_id = $1 AND t.grant_id = dead.id
	)
	DELETE FROM grants g USING dead WHERE g.site_id = $1 AND g.id = dead.id`

// PurgeExpired implements store.TokenStore, in batches of purgeBatch
// rows, each a transaction with its own deadline: a backlog takes as long
// as it takes, and a pass that ctx cuts short has deleted whole batches.
func (s *Site) PurgeExpired(ctx context.Context, before time.Time) error {
	for _, p := range purgeExpired {
		err := s.purgeAll(ctx, "purging expired "+p.what, func(ctx context.Context, q querier) (int64, error) {
			tag, err := q.Exec(ctx, p.sql, s.id, before, purgeBatch)
			return tag.RowsAffected(), err
		})
		if err != nil {
			return err
		}
	}
	return s.purgeAll(ctx, "purging dead grants", func(ctx context.Context, q querier) (int64, error) {
		tag, err := q.Exec(ctx, purgeGrants, s.id, purgeBatch)
		return tag.RowsAffected(), err
	})
}

// purgeAll runs one batch after the other until one deletes less than a
// whole batch.
func (s *Site) purgeAll(ctx context.Context, op string, batch func(context.Context, querier) (int64, error)) error {
	for {
		var n int64
		err := s.run(ctx, op, func(ctx context.Context, q querier) (err error) {
			n, err = batch(ctx, q)
			return err
		})
		if err != nil || n < purgeBatch {
			return err
		}
	}
}
