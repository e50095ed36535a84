package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// ClaimRun implements store.Scheduler: the first instance to ask once
// the job's next run is due moves it a period ahead and runs the job.
// Due is decided by the database's clock, the one all instances share.
//
// A claim holds for nine tenths of the period: an instance alone ticks
// every period too, a few milliseconds early or late, and a claim held for
// the full period would make it miss every other turn.
func (s *Site) ClaimRun(ctx context.Context, job string, period time.Duration) (bool, error) {
	hold := (period - period/10).Microseconds()
	var mine bool
	err := s.run(ctx, "claiming a periodic job", func(ctx context.Context, q querier) error {
		err := q.QueryRow(ctx, `INSERT INTO jobs (site_id, name, next_run)
			VALUES ($1, $2, now() + $3::float8 * interval '1 microsecond')
			ON CONFLICT (site_id, name) DO UPDATE SET next_run = EXCLUDED.next_run
			WHERE jobs.next_run <= now() RETURNING true`, s.id, job, hold).Scan(&mine)
		if errors.Is(err, pgx.ErrNoRows) {
			mine = false
			return nil
		}
		return err
	})
	return mine, err
}
