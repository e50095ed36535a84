package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/store"
)

// The audit trail in PostgreSQL (migration 005): a row per event, written
// by the transaction of the change it describes (txAudit).

// txAudit is tx for a method that writes: the transaction also stores the
// audit events of the context and those fn adds.
func (s *Site) txAudit(ctx context.Context, op string, fn func(context.Context, pgx.Tx, *store.AuditTx) error) error {
	var at *store.AuditTx
	err := s.txFor(ctx, op, callTimeout, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		at = store.BeginAudit(ctx)
		if err := fn(ctx, tx, at); err != nil {
			return err
		}
		return s.putEvents(ctx, tx, at.Events)
	})
	if err == nil {
		at.Committed()
	}
	return err
}

// write is run for a method that writes in one statement: when the
// context has audit events to store, the statement and their rows are
// one transaction.
func (s *Site) write(ctx context.Context, op string, fn func(context.Context, querier) error) error {
	if !store.AuditOf(ctx).Pending() {
		return s.run(ctx, op, fn)
	}
	return s.txAudit(ctx, op, func(ctx context.Context, tx pgx.Tx, _ *store.AuditTx) error { return fn(ctx, tx) })
}

func (s *Site) putEvents(ctx context.Context, q querier, evs []store.AuditEvent) error {
	if len(evs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for i := range evs {
		e := &evs[i]
		e.Time = e.Time.Truncate(time.Microsecond) // what timestamptz keeps
		data, err := json.Marshal(e)
		if err != nil {
			return err
		}
		b.Queue(`INSERT INTO audit (site_id, at, type, subject, actor_sub, client_id, data)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
			s.id, e.Time, e.Type, e.Subject, e.ActorSub, e.ClientID, data)
	}
	br := q.SendBatch(ctx, b)
	for i := range evs {
		var id int64
		if err := br.QueryRow().Scan(&id); err != nil {
			br.Close()
			return err
		}
		evs[i].ID = strconv.FormatInt(id, 10)
	}
	return br.Close()
}

// auditCursor is a position in the newest-first order: the last event
// seen, by its time (microseconds) and id.
func auditCursor(at time.Time, id int64) string {
	return strconv.FormatInt(at.UnixMicro(), 10) + "." + strconv.FormatInt(id, 10)
}

// The times a cursor may name: 0001-01-01 to 9999-12-31, in Unix
// microseconds.
const (
	minCursorMicros = -62135596800000000
	maxCursorMicros = 253402300799999999
)

func parseAuditCursor(c string) (time.Time, int64, error) {
	a, b, ok := strings.Cut(c, ".")
	micros, err1 := strconv.ParseInt(a, 10, 64)
	id, err2 := strconv.ParseInt(b, 10, 64)
	// A cursor this store wrote is a time PostgreSQL can hold (years 1 to
	// 9999 here) and an event's id; anything else is a forged or mangled
	// link, refused as such rather than failing the query.
	if !ok || err1 != nil || err2 != nil || id < 1 || micros < minCursorMicros || micros > maxCursorMicros {
		return time.Time{}, 0, store.ErrBadCursor
	}
	return time.UnixMicro(micros), id, nil
}

// QueryAudit implements store.AuditStore. A person's events are two
// index walks, as the person concerned and as the operator who acted,
// each stopping at a page, merged.
func (s *Site) QueryAudit(ctx context.Context, q store.AuditQuery) (store.AuditPage, error) {
	var page store.AuditPage
	limit := store.AuditLimit(q.Limit)
	args := []any{s.id}
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	var where []string
	if q.ClientID != "" {
		where = append(where, "client_id = "+arg(q.ClientID))
	}
	if q.Type != "" {
		where = append(where, "type = "+arg(q.Type))
	}
	if !q.Since.IsZero() {
		where = append(where, "at >= "+arg(q.Since))
	}
	if !q.Until.IsZero() {
		where = append(where, "at < "+arg(q.Until))
	}
	if q.Cursor != "" {
		at, id, err := parseAuditCursor(q.Cursor)
		if err != nil {
			return page, err
		}
		where = append(where, fmt.Sprintf("(at, id) < (%s, %s)", arg(at), arg(id)))
	}
	lim := arg(limit)
	one := func(owner string) string {
		w := append([]string{"site_id = $1"}, where...)
		if owner != "" {
			w = append(w, owner)
		}
		return `SELECT id, at, data FROM audit WHERE ` + strings.Join(w, " AND ") +
			` ORDER BY at DESC, id DESC LIMIT ` + lim
	}
	sql := one("")
	if q.Subject != "" {
		sub := arg(q.Subject)
		sql = `SELECT id, at, data FROM ((` + one("subject = "+sub) + `) UNION ALL (` +
			one("actor_sub = "+sub+" AND subject <> "+sub) + `)) x ORDER BY at DESC, id DESC LIMIT ` + lim
	}
	err := s.run(ctx, "querying the audit trail", func(ctx context.Context, db querier) error {
		page = store.AuditPage{}
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var lastAt time.Time
		var lastID int64
		for rows.Next() {
			var data []byte
			if err := rows.Scan(&lastID, &lastAt, &data); err != nil {
				return err
			}
			var e store.AuditEvent
			if err := json.Unmarshal(data, &e); err != nil {
				return err
			}
			e.ID = strconv.FormatInt(lastID, 10)
			page.Events = append(page.Events, e)
		}
		if len(page.Events) == limit {
			page.Next = auditCursor(lastAt, lastID)
		}
		return rows.Err()
	})
	return page, err
}

// PurgeAudit implements store.AuditStore, in batches of purgeBatch
// events.
func (s *Site) PurgeAudit(ctx context.Context, before time.Time) (int, error) {
	total := 0
	err := s.purgeAll(ctx, "purging old audit events", func(ctx context.Context, q querier) (int64, error) {
		tag, err := q.Exec(ctx, `DELETE FROM audit WHERE site_id = $1 AND id IN
			(SELECT id FROM audit WHERE site_id = $1 AND at < $2 ORDER BY at LIMIT $3)`, s.id, before, purgeBatch)
		total += int(tag.RowsAffected())
		return tag.RowsAffected(), err
	})
	return total, err
}

// grantsOf selects the ids of a person's grants, live and revoked.
const grantsOf = `SELECT id FROM grants WHERE site_id = $1 AND data->'identity'->>'sub' = $2`

// ExportSubject implements store.AuditStore, in one read-only snapshot.
func (s *Site) ExportSubject(ctx context.Context, subject string) (*store.SubjectData, error) {
	if subject == "" {
		return nil, store.ErrNotFound
	}
	var d *store.SubjectData
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err := s.txFor(ctx, "exporting a person's data", callTimeout, opts, func(ctx context.Context, tx pgx.Tx) error {
		d = &store.SubjectData{Subject: subject}
		rows, err := tx.Query(ctx, `SELECT client_id, data FROM consents WHERE site_id = $1 AND subject = $2
			ORDER BY client_id`, s.id, subject)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c store.SubjectConsent
			var data []byte
			if err := rows.Scan(&c.ClientID, &data); err != nil {
				rows.Close()
				return err
			}
			if err := json.Unmarshal(data, &c.Consent); err != nil {
				rows.Close()
				return err
			}
			d.Consents = append(d.Consents, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT data, revoked_at IS NOT NULL, refreshed_at FROM grants
			WHERE site_id = $1 AND data->'identity'->>'sub' = $2 ORDER BY created_at, id`, s.id, subject)
		if err != nil {
			return err
		}
		for rows.Next() {
			var data []byte
			var revoked bool
			var refreshed *time.Time
			if err := rows.Scan(&data, &revoked, &refreshed); err != nil {
				rows.Close()
				return err
			}
			g, err := decodeGrant(data, revoked, refreshed)
			if err != nil {
				rows.Close()
				return err
			}
			d.Grants = append(d.Grants, g)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM tokens WHERE site_id = $1 AND grant_id IN (`+grantsOf+`)),
			(SELECT count(*) FROM codes WHERE site_id = $1 AND data->'identity'->>'sub' = $2),
			(SELECT count(*) FROM pending WHERE site_id = $1 AND data->'identity'->>'sub' = $2)`,
			s.id, subject).Scan(&d.Tokens, &d.Codes, &d.Pending)
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT id, data FROM audit WHERE site_id = $1 AND (subject = $2 OR actor_sub = $2)
			ORDER BY at DESC, id DESC`, s.id, subject)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var data []byte
			if err := rows.Scan(&id, &data); err != nil {
				return err
			}
			var e store.AuditEvent
			if err := json.Unmarshal(data, &e); err != nil {
				return err
			}
			e.ID = strconv.FormatInt(id, 10)
			d.Events = append(d.Events, e)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		d.Steps, err = s.subjectSteps(ctx, tx, subject)
		return err
	})
	return store.FoundSubject(d, err)
}

// EraseSubject implements store.AuditStore in one transaction. Codes go
// first (a redeem under way holds its code's row, so the erasure waits for
// it and then sees its grant); the grants are revoked before their tokens
// are deleted (a rotation under way holds its grant's row, and one that
// comes later finds the grant gone); every instance hears of it as a
// change of tokens.
func (s *Site) EraseSubject(ctx context.Context, subject string) (*store.Erased, error) {
	if subject == "" {
		return nil, store.ErrNotFound
	}
	var n store.Erased
	err := s.txAudit(ctx, "erasing a person's data", func(ctx context.Context, tx pgx.Tx, at *store.AuditTx) error {
		n = store.Erased{}
		count := func(dst *int, sql string) error {
			tag, err := tx.Exec(ctx, sql, s.id, subject)
			*dst = int(tag.RowsAffected())
			return err
		}
		steps := []struct {
			dst *int
			sql string
		}{
			{&n.Codes, `DELETE FROM codes WHERE site_id = $1 AND data->'identity'->>'sub' = $2`},
			{&n.Pending, `DELETE FROM pending WHERE site_id = $1 AND data->'identity'->>'sub' = $2`},
			{&n.Consents, `DELETE FROM consents WHERE site_id = $1 AND subject = $2`},
			{&n.Revoked, `UPDATE grants SET revoked_at = now() WHERE site_id = $1
				AND data->'identity'->>'sub' = $2 AND revoked_at IS NULL`},
			{&n.Tokens, `DELETE FROM tokens WHERE site_id = $1 AND grant_id IN (` + grantsOf + `)`},
			{&n.Grants, `DELETE FROM grants WHERE site_id = $1 AND data->'identity'->>'sub' = $2`},
			{&n.Events, `DELETE FROM audit WHERE site_id = $1 AND (subject = $2 OR actor_sub = $2)`},
			{&n.Steps, `DELETE FROM connection_steps WHERE site_id = $1 AND subject = $2 AND subject <> ''`},
		}
		for _, st := range steps {
			if err := count(st.dst, st.sql); err != nil {
				return err
			}
		}
		if err := at.Erased(subject, &n); err != nil {
			return err
		}
		return s.announceIf(ctx, tx, int64(n.Grants), store.ChangeTokens)
	})
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// RecordAudit implements store.AuditStore.
func (s *Site) RecordAudit(ctx context.Context) error {
	return s.tx(ctx, "recording audit events", func(context.Context, pgx.Tx) error { return nil })
}
