package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/authserver"
)

// The grants' lists, each read from one partial index of live grants
// (002_grant_lists.sql) in (created_at, id) order, a page after the
// cursor's row.
const (
	listBySubject = `SELECT data, refreshed_at FROM grants
		WHERE site_id = $1 AND data->'identity'->>'sub' = $2 AND revoked_at IS NULL
		AND (created_at, id) > ($3, $4)
		ORDER BY created_at, id LIMIT $5`
	listByClient = `SELECT data, refreshed_at FROM grants
		WHERE site_id = $1 AND client_id = $2 AND revoked_at IS NULL
		AND (created_at, id) > ($3, $4)
		ORDER BY created_at, id LIMIT $5`
)

// beforeAll is a creation time earlier than any grant's, where a list
// without a cursor starts.
var beforeAll = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)

// ListGrants implements authserver.GrantStore.
func (s *Site) ListGrants(ctx context.Context, q authserver.GrantQuery) ([]*authserver.Grant, error) {
	sql, owner := listBySubject, q.Subject
	if q.Subject == "" {
		sql, owner = listByClient, q.ClientID
	}
	if owner == "" {
		return nil, nil
	}
	after := q.After
	if after.IsZero() {
		after.CreatedAt = beforeAll
	}
	var out []*authserver.Grant
	err := s.run(ctx, "listing grants", func(ctx context.Context, db querier) error {
		rows, err := db.Query(ctx, sql, s.id, owner, after.CreatedAt, after.ID, authserver.PageLimit(q.Limit))
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*authserver.Grant, error) {
			var data []byte
			var refreshed *time.Time
			if err := row.Scan(&data, &refreshed); err != nil {
				return nil, err
			}
			return decodeGrant(data, false, refreshed)
		})
		return err
	})
	return out, err
}

// GrantCounts implements authserver.GrantStore, from the index of live
// grants by client alone.
func (s *Site) GrantCounts(ctx context.Context) (map[string]int, error) {
	var out map[string]int
	err := s.run(ctx, "counting grants", func(ctx context.Context, db querier) error {
		out = map[string]int{}
		rows, err := db.Query(ctx, `SELECT client_id, count(*) FROM grants
			WHERE site_id = $1 AND revoked_at IS NULL GROUP BY client_id`, s.id)
		if err != nil {
			return err
		}
		var id string
		var n int
		_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error {
			out[id] = n
			return nil
		})
		return err
	})
	return out, err
}

// DisconnectGrant implements authserver.GrantStore. The grant's row is
// locked as a rotation locks it, so a refresh under way either commits
// before the revocation or finds the grant revoked.
func (s *Site) DisconnectGrant(ctx context.Context, id, subject string) (*authserver.Grant, error) {
	var g *authserver.Grant
	err := s.tx(ctx, "disconnecting a grant", func(ctx context.Context, tx pgx.Tx) error {
		var data []byte
		var revoked bool
		var refreshed *time.Time
		err := tx.QueryRow(ctx, `SELECT data, revoked_at IS NOT NULL, refreshed_at FROM grants
			WHERE site_id = $1 AND id = $2 AND data->'identity'->>'sub' = $3 AND $3 <> '' FOR UPDATE`,
			s.id, id, subject).Scan(&data, &revoked, &refreshed)
		if err != nil {
			return notFound(err)
		}
		if g, err = decodeGrant(data, revoked, refreshed); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM consents WHERE site_id = $1 AND client_id = $2 AND subject = $3`,
			s.id, g.ClientID, subject); err != nil {
			return err
		}
		return s.revokeGrant(ctx, tx, id)
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}
