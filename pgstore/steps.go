package pgstore

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/store"
)

// The connection steps (store.StepStore, migration 008): a row per key,
// which every instance's addition adds to.

// addStep adds one step to its row, creating it, and says whether it
// did: Step.Merge in SQL (every SET reads the row as it was).
const addStep = `INSERT INTO connection_steps AS c
		(site_id, client_id, subject, step, reason, error, detail, count, first_at, last_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
	ON CONFLICT (site_id, client_id, subject, step, reason) DO UPDATE SET
		count = c.count + EXCLUDED.count,
		first_at = least(c.first_at, EXCLUDED.first_at),
		error = CASE WHEN EXCLUDED.last_at >= c.last_at THEN EXCLUDED.error ELSE c.error END,
		detail = CASE WHEN EXCLUDED.last_at >= c.last_at THEN EXCLUDED.detail ELSE c.detail END,
		last_at = greatest(c.last_at, EXCLUDED.last_at)
	RETURNING xmax = 0`

// stepKeyOrder is store.StepKey's order: by bytes, not the database's
// collation.
const stepKeyOrder = `client_id COLLATE "C", subject COLLATE "C", step COLLATE "C", reason COLLATE "C"`

// evictSteps deletes the $2 rows store.EvictSteps picks. Rows another
// instance's addition holds are left for the next addition rather than
// waited for.
const evictSteps = `DELETE FROM connection_steps WHERE site_id = $1 AND (client_id, subject, step, reason) IN (
	SELECT client_id, subject, step, reason FROM connection_steps WHERE site_id = $1
	ORDER BY (reason = '` + store.ReasonUnknownClient + `') DESC, last_at, ` + stepKeyOrder + `
	LIMIT $2 FOR UPDATE SKIP LOCKED)`

const stepColumns = `client_id, subject, step, reason, error, detail, count, first_at, last_at`

// AddSteps implements store.StepStore: one round trip for the rows, taken
// in key order, and one more for the bound when a row was created.
func (s *Site) AddSteps(ctx context.Context, steps []store.Step) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(steps) == 0 {
		return nil
	}
	rows := slices.Clone(steps)
	for i := range rows {
		store.ClipStep(&rows[i])
		rows[i].First, rows[i].Last = rows[i].First.Truncate(time.Microsecond), rows[i].Last.Truncate(time.Microsecond)
	}
	store.SortSteps(rows)
	return s.tx(ctx, "adding connection steps", func(ctx context.Context, tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, r := range rows {
			b.Queue(addStep, s.id, r.ClientID, r.Subject, r.Name, r.Reason, r.Error, r.Detail, r.Count, r.First, r.Last)
		}
		br := tx.SendBatch(ctx, b)
		created := false
		for range rows {
			var inserted bool
			if err := br.QueryRow().Scan(&inserted); err != nil {
				br.Close()
				return err
			}
			created = created || inserted
		}
		if err := br.Close(); err != nil || !created {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM connection_steps WHERE site_id = $1`, s.id).Scan(&n); err != nil {
			return err
		}
		if n <= store.MaxSteps {
			return nil
		}
		_, err := tx.Exec(ctx, evictSteps, s.id, n-store.MaxSteps)
		return err
	})
}

// QuerySteps implements store.StepStore.
func (s *Site) QuerySteps(ctx context.Context, q store.StepQuery) ([]store.Step, error) {
	owner, arg := "client_id = $2", q.ClientID
	if q.ClientID == "" {
		owner, arg = "subject = $2 AND subject <> ''", q.Subject
	}
	var rows []store.Step
	err := s.run(ctx, "reading connection steps", func(ctx context.Context, db querier) (err error) {
		rows, err = readSteps(ctx, db, `SELECT `+stepColumns+` FROM connection_steps
			WHERE site_id = $1 AND `+owner+` AND last_at >= $3
			ORDER BY last_at DESC, `+stepKeyOrder+` DESC LIMIT $4`,
			s.id, arg, q.Since, store.MaxStepsRead)
		return err
	})
	if err != nil {
		return nil, err
	}
	return store.LatestSteps(rows), nil
}

func readSteps(ctx context.Context, db querier, sql string, args ...any) ([]store.Step, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Step
	for rows.Next() {
		var r store.Step
		if err := rows.Scan(&r.ClientID, &r.Subject, &r.Name, &r.Reason, &r.Error, &r.Detail, &r.Count,
			&r.First, &r.Last); err != nil {
			return nil, err
		}
		r.First, r.Last = r.First.UTC(), r.Last.UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

// subjectSteps reads the rows that name subject, by key.
func (s *Site) subjectSteps(ctx context.Context, q querier, subject string) ([]store.Step, error) {
	rows, err := readSteps(ctx, q, `SELECT `+stepColumns+` FROM connection_steps
		WHERE site_id = $1 AND subject = $2 AND subject <> ''`, s.id, subject)
	store.SortSteps(rows)
	return rows, err
}

// PurgeSteps implements store.StepStore, in batches of purgeBatch rows.
func (s *Site) PurgeSteps(ctx context.Context, before time.Time) (int, error) {
	total := 0
	err := s.purgeAll(ctx, "purging old connection steps", func(ctx context.Context, q querier) (int64, error) {
		tag, err := q.Exec(ctx, `DELETE FROM connection_steps WHERE site_id = $1 AND (client_id, subject, step, reason) IN (
			SELECT client_id, subject, step, reason FROM connection_steps WHERE site_id = $1 AND last_at < $2
			LIMIT $3 FOR UPDATE SKIP LOCKED)`, s.id, before, purgeBatch)
		total += int(tag.RowsAffected())
		return tag.RowsAffected(), err
	})
	return total, err
}
