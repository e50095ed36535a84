package pgstore

import (
	"context"
	"time"
)

// ClockSkew reports how far this host's clock is from the database's:
// instances decide expiries and grace windows by their own clocks, so
// their skew must stay far below the refresh grace window. The round
// trip's midpoint stands for the moment the database read its clock.
func (s *Site) ClockSkew(ctx context.Context) (time.Duration, error) {
	var skew time.Duration
	err := s.run(ctx, "reading the database clock", func(ctx context.Context, q querier) error {
		before := time.Now()
		var db time.Time
		if err := q.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&db); err != nil {
			return err
		}
		after := time.Now()
		mid := before.Add(after.Sub(before) / 2)
		skew = mid.Sub(db)
		return nil
	})
	return skew, err
}
