package pgstore

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/store"
)

// The grants' lists, grouped as store.GrantStore says: a person's by
// client, read from grants_live_by_subject (002_grant_lists.sql) and
// sorted, an application's by person, read in order from
// grants_live_by_client_subject (003_grant_groups.sql). Groups and ids
// compare in the "C" collation, byte by byte, as the bbolt store orders
// its keys.
const (
	listBySubject = `SELECT data, refreshed_at FROM grants
		WHERE site_id = $1 AND data->'identity'->>'sub' = $2 AND revoked_at IS NULL
		AND (client_id COLLATE "C", created_at, id COLLATE "C") > ($3, $4, $5)
		ORDER BY client_id COLLATE "C", created_at, id COLLATE "C" LIMIT $6`
	listByClient = `SELECT data, refreshed_at FROM grants
		WHERE site_id = $1 AND client_id COLLATE "C" = $2 AND revoked_at IS NULL
		AND ((data->'identity'->>'sub') COLLATE "C", created_at, id COLLATE "C") > ($3, $4, $5)
		ORDER BY (data->'identity'->>'sub') COLLATE "C", created_at, id COLLATE "C" LIMIT $6`
)

// connectionsSQL reads every live grant of a page of groups, in list
// order: the groups are the first $4 after $3 (from $3 on when
// {{cmp}} is >=, for the first page). {{owner}} and {{group}} are the
// columns of the list's owner and group.
const connectionsSQL = `SELECT data, refreshed_at FROM grants
	WHERE site_id = $1 AND {{owner}} = $2 AND revoked_at IS NULL AND {{group}} IN (
		SELECT DISTINCT {{group}} AS grp FROM grants
		WHERE site_id = $1 AND {{owner}} = $2 AND revoked_at IS NULL AND {{group}} {{cmp}} $3
		ORDER BY grp LIMIT $4)
	ORDER BY {{group}}, created_at, id COLLATE "C"`

const (
	subjectColumn = `(data->'identity'->>'sub') COLLATE "C"`
	clientColumn  = `client_id COLLATE "C"`
)

// connectionQueries are connectionsSQL for a person's list and a
// client's, each for the first page and the others.
var connectionQueries = map[[2]bool]string{}

func init() {
	for _, bySubject := range []bool{true, false} {
		for _, first := range []bool{true, false} {
			owner, group := clientColumn, subjectColumn
			if bySubject {
				// The person's own index is on the expression without a
				// collation; equality does not need one.
				owner, group = `data->'identity'->>'sub'`, clientColumn
			}
			cmp := ">"
			if first {
				cmp = ">="
			}
			connectionQueries[[2]bool{bySubject, first}] = strings.NewReplacer(
				"{{owner}}", owner, "{{group}}", group, "{{cmp}}", cmp).Replace(connectionsSQL)
		}
	}
}

// beforeAll is a creation time earlier than any grant's, where a list
// without a cursor starts.
var beforeAll = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)

// ListGrants implements store.GrantStore.
func (s *Site) ListGrants(ctx context.Context, q store.GrantQuery) ([]*store.Grant, error) {
	sql, owner, group := listBySubject, q.Subject, q.After.ClientID
	if q.Subject == "" {
		sql, owner, group = listByClient, q.ClientID, q.After.Subject
	}
	if owner == "" {
		return nil, nil
	}
	after := q.After
	if after.IsZero() {
		// Before the first group, whose name may be empty.
		group, after.CreatedAt = "", beforeAll
	}
	var out []*store.Grant
	err := s.run(ctx, "listing grants", func(ctx context.Context, db querier) error {
		rows, err := db.Query(ctx, sql, s.id, owner, group, after.CreatedAt, after.ID, store.PageLimit(q.Limit))
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, scanGrant)
		return err
	})
	return out, err
}

// scanGrant reads a live grant's row of a list.
func scanGrant(row pgx.CollectableRow) (*store.Grant, error) {
	var data []byte
	var refreshed *time.Time
	if err := row.Scan(&data, &refreshed); err != nil {
		return nil, err
	}
	return decodeGrant(data, false, refreshed)
}

// ListConnections implements store.GrantStore: one statement picks
// the page's groups and reads their grants, so the page is of one moment;
// the grants are counted in as they arrive, never held all at once.
func (s *Site) ListConnections(ctx context.Context, q store.ConnectionQuery) ([]*store.Connection, error) {
	owner, bySubject := q.Subject, true
	if q.Subject == "" {
		owner, bySubject = q.ClientID, false
	}
	if owner == "" {
		return nil, nil
	}
	sql := connectionQueries[[2]bool{bySubject, q.After == ""}]
	var out []*store.Connection
	err := s.run(ctx, "listing connections", func(ctx context.Context, db querier) error {
		out = nil
		rows, err := db.Query(ctx, sql, s.id, owner, q.After, store.PageLimit(q.Limit))
		if err != nil {
			return err
		}
		var conn *store.Connection
		var group string
		var data []byte
		var refreshed *time.Time
		_, err = pgx.ForEachRow(rows, []any{&data, &refreshed}, func() error {
			g, err := decodeGrant(data, false, refreshed)
			if err != nil {
				return err
			}
			key := g.Identity.Subject
			if bySubject {
				key = g.ClientID
			}
			if conn == nil || key != group {
				conn, group = &store.Connection{}, key
				out = append(out, conn)
			}
			conn.Add(g)
			return nil
		})
		return err
	})
	return out, err
}

// GrantCounts implements store.GrantStore, from the live grants
// alone (grants_live_by_client_subject holds them in the order counted).
func (s *Site) GrantCounts(ctx context.Context) (map[string]store.GrantCount, error) {
	var out map[string]store.GrantCount
	err := s.run(ctx, "counting grants", func(ctx context.Context, db querier) error {
		out = map[string]store.GrantCount{}
		rows, err := db.Query(ctx, `SELECT client_id, count(DISTINCT data->'identity'->>'sub'), count(*) FROM grants
			WHERE site_id = $1 AND revoked_at IS NULL GROUP BY client_id`, s.id)
		if err != nil {
			return err
		}
		var id string
		var n store.GrantCount
		_, err = pgx.ForEachRow(rows, []any{&id, &n.People, &n.Grants}, func() error {
			out[id] = n
			return nil
		})
		return err
	})
	return out, err
}

// DisconnectGrant implements store.GrantStore. The grant's row is
// locked as a rotation locks it, so a refresh under way either commits
// before the revocation or finds the grant revoked.
func (s *Site) DisconnectGrant(ctx context.Context, id, subject string) (*store.Grant, error) {
	var g *store.Grant
	err := s.txAudit(ctx, "disconnecting a grant", func(ctx context.Context, tx pgx.Tx, at *store.AuditTx) error {
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
		at.OfClient(g.ClientID)
		if !revoked {
			at.Ended(1)
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

// DisconnectClient implements store.GrantStore. Every live grant of
// the pair is locked as a rotation locks it (so a refresh under way either
// commits first or finds its grant revoked), in id order, so that two
// disconnects of one pair take turns instead of deadlocking; then one
// update revokes them all, announced as any revocation is.
func (s *Site) DisconnectClient(ctx context.Context, clientID, subject string) (int, error) {
	if clientID == "" || subject == "" {
		return 0, store.ErrNotFound
	}
	var n int64
	err := s.txAudit(ctx, "disconnecting an application", func(ctx context.Context, tx pgx.Tx, at *store.AuditTx) error {
		n = 0
		rows, err := tx.Query(ctx, `SELECT id FROM grants
			WHERE site_id = $1 AND client_id COLLATE "C" = $2 AND (data->'identity'->>'sub') COLLATE "C" = $3
			AND revoked_at IS NULL ORDER BY id COLLATE "C" FOR UPDATE`, s.id, clientID, subject)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM consents WHERE site_id = $1 AND client_id = $2 AND subject = $3`,
			s.id, clientID, subject)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			if tag.RowsAffected() == 0 {
				return store.ErrNotFound
			}
			return nil
		}
		tag, err = tx.Exec(ctx, `UPDATE grants SET revoked_at = now()
			WHERE site_id = $1 AND id = ANY($2) AND revoked_at IS NULL`, s.id, ids)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		at.Ended(int(n))
		return s.announceIf(ctx, tx, n, store.ChangeTokens)
	})
	return int(n), err
}
