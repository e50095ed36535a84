package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/store"
)

// addUsageBucket adds a bucket's counts to its row, creating it at zero.
const addUsageBucket = `INSERT INTO usage_buckets AS u (site_id, span, start, tokens, refused, causes, latency)
	VALUES ($1, $2, $3, $4, $5, $6, $7)
	ON CONFLICT (site_id, span, start) DO UPDATE SET
		tokens = u.tokens + EXCLUDED.tokens, refused = u.refused + EXCLUDED.refused,
		causes = usage_sum(u.causes, EXCLUDED.causes), latency = usage_sum(u.latency, EXCLUDED.latency)`

// purgeUsage deletes a span's rows before a start. Rows another
// instance's addition holds are left for the next addition rather than
// waited for: the purge is never in a hurry.
const purgeUsage = `DELETE FROM usage_buckets WHERE (site_id, span, start) IN (
	SELECT site_id, span, start FROM usage_buckets WHERE site_id = $1 AND span = $2 AND start < $3
	FOR UPDATE SKIP LOCKED)`

// AddUsage implements store.UsageStore: one round trip, the rows taken
// in the plan's order.
func (s *Site) AddUsage(ctx context.Context, deltas []store.UsageDelta) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := store.PlanUsage(deltas)
	if len(p.Buckets) == 0 && p.LastActive.IsZero() {
		return nil
	}
	type row struct {
		span         int
		start        time.Time
		tokens       int64
		refused      int64
		causes, bins []byte
	}
	rows := make([]row, len(p.Buckets))
	for i := range p.Buckets {
		pb := &p.Buckets[i]
		st := pb.Stored()
		causes, err := json.Marshal(st.Causes)
		if err != nil {
			return err
		}
		latency, err := json.Marshal(st.Latency)
		if err != nil {
			return err
		}
		rows[i] = row{int(pb.Span / time.Second), pb.Start, int64(st.Tokens), int64(st.Refused), causes, latency}
	}
	return s.tx(ctx, "adding usage", func(ctx context.Context, tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, r := range rows {
			b.Queue(addUsageBucket, s.id, r.span, r.start, r.tokens, r.refused, r.causes, r.bins)
		}
		if !p.LastActive.IsZero() {
			b.Queue(`INSERT INTO usage_last_active AS l (site_id, at) VALUES ($1, $2)
				ON CONFLICT (site_id) DO UPDATE SET at = greatest(l.at, EXCLUDED.at)`, s.id, p.LastActive.Truncate(time.Microsecond))
		}
		if len(rows) > 0 {
			b.Queue(purgeUsage, s.id, int(store.UsageMinute/time.Second), p.KeepMinutesFrom)
			b.Queue(purgeUsage, s.id, int(store.UsageHour/time.Second), p.KeepHoursFrom)
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// LoadUsage implements store.UsageStore.
func (s *Site) LoadUsage(ctx context.Context) (*store.Usage, error) {
	var u *store.Usage
	err := s.run(ctx, "loading usage", func(ctx context.Context, q querier) (err error) {
		u, err = loadUsage(ctx, q, s.id)
		return err
	})
	return u, err
}

// LoadUsage reads the usage of the school with this issuer (in its one
// spelling) without opening its site: no key secret, no sites row made
// for a school never started, whose usage is none.
func (p *Pool) LoadUsage(ctx context.Context, issuer string) (*store.Usage, error) {
	var u *store.Usage
	err := retry(ctx, "loading usage", callTimeout, func(ctx context.Context) error {
		var id int64
		err := p.db.QueryRow(ctx, `SELECT id FROM sites WHERE issuer = $1`, issuer).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			u = &store.Usage{}
			return nil
		}
		if err != nil {
			return err
		}
		u, err = loadUsage(ctx, p.db, id)
		return err
	})
	return u, err
}

func loadUsage(ctx context.Context, q querier, siteID int64) (*store.Usage, error) {
	u := &store.Usage{}
	err := q.QueryRow(ctx, `SELECT at FROM usage_last_active WHERE site_id = $1`, siteID).Scan(&u.LastActive)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return nil, err
	default:
		u.LastActive = u.LastActive.UTC()
	}
	rows, err := q.Query(ctx, `SELECT span, start, tokens, refused, causes, latency FROM usage_buckets
		WHERE site_id = $1 ORDER BY span, start`, siteID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var span int
		var tokens, refused int64
		var b store.UsageBucket
		var causes, latency []byte
		if err := rows.Scan(&span, &b.Start, &tokens, &refused, &causes, &latency); err != nil {
			return nil, err
		}
		st := store.UsageStored{Tokens: uint64(tokens), Refused: uint64(refused)}
		if err := json.Unmarshal(causes, &st.Causes); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(latency, &st.Latency); err != nil {
			return nil, err
		}
		b.Span, b.Start, b.UsageCounts = time.Duration(span)*time.Second, b.Start.UTC(), st.Counts()
		u.Buckets = append(u.Buckets, b)
	}
	return u, rows.Err()
}
