package pgstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/store"
)

// GetToken implements store.TokenStore. A token whose grant is gone
// (purged) is gone too. Revocation is read from both rows, so revoking a
// grant is one row's update however many tokens it issued.
func (s *Site) GetToken(ctx context.Context, hash string) (*store.Token, *store.Grant, error) {
	var t *store.Token
	var g *store.Grant
	err := s.run(ctx, "reading a token", func(ctx context.Context, q querier) error {
		var tdata, gdata []byte
		var tokRevoked, grantRevoked bool
		var rotated, refreshed *time.Time
		err := q.QueryRow(ctx, `SELECT t.data, t.revoked_at IS NOT NULL, t.rotated_at, g.data, g.revoked_at IS NOT NULL, g.refreshed_at
			FROM tokens t JOIN grants g ON g.site_id = t.site_id AND g.id = t.grant_id
			WHERE t.site_id = $1 AND t.hash = $2`, s.id, hash).Scan(&tdata, &tokRevoked, &rotated, &gdata, &grantRevoked, &refreshed)
		if err != nil {
			return notFound(err)
		}
		if t, err = decodeToken(tdata, tokRevoked, rotated); err != nil {
			return err
		}
		g, err = decodeGrant(gdata, grantRevoked, refreshed)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return t, g, nil
}

// RotateRefresh implements store.TokenStore. The token's row is
// locked, then its grant's (always in that order, as RedeemCode locks the
// code before the grant), so rotations of one token take turns and see
// each other's RotatedAt.
func (s *Site) RotateRefresh(ctx context.Context, hash, holder string, now time.Time, grace time.Duration, rotate func(*store.Token, *store.Grant) ([]store.IssuedToken, error)) error {
	var outcome store.RotateOutcome
	err := s.txAudit(ctx, "rotating a refresh token", func(ctx context.Context, tx pgx.Tx, at *store.AuditTx) error {
		t, err := s.lockToken(ctx, tx, hash)
		if err != nil {
			return err
		}
		if !t.HeldBy(holder) {
			return store.ErrWrongKey
		}
		g, err := s.lockGrant(ctx, tx, t.GrantID)
		if err != nil {
			return err
		}
		if outcome = store.DecideRotate(t, now, grace); outcome == store.RotateReplay {
			at.Add(store.RotateEvent(outcome, g, now))
			return s.revokeGrant(ctx, tx, g.ID)
		}
		toks, err := rotate(t, g)
		if err != nil {
			return callbackError{err}
		}
		at.Add(store.RotateEvent(outcome, g, now))
		b := &pgx.Batch{}
		if outcome == store.RotateFirst {
			b.Queue(`UPDATE tokens SET rotated_at = $3 WHERE site_id = $1 AND hash = $2`, s.id, hash, now)
		}
		if g.RefreshDue(now) {
			b.Queue(`UPDATE grants SET refreshed_at = $3 WHERE site_id = $1 AND id = $2`, s.id, g.ID, now)
		}
		if err := s.queueTokens(b, toks); err != nil {
			return err
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return err
	}
	return outcome.Err()
}

// lockToken reads a token and locks its row until the transaction ends.
func (s *Site) lockToken(ctx context.Context, tx pgx.Tx, hash string) (*store.Token, error) {
	var data []byte
	var revoked bool
	var rotated *time.Time
	err := tx.QueryRow(ctx, `SELECT data, revoked_at IS NOT NULL, rotated_at FROM tokens
		WHERE site_id = $1 AND hash = $2 FOR UPDATE`, s.id, hash).Scan(&data, &revoked, &rotated)
	if err != nil {
		return nil, notFound(err)
	}
	return decodeToken(data, revoked, rotated)
}

// lockGrant reads a grant and locks its row until the transaction ends.
func (s *Site) lockGrant(ctx context.Context, tx pgx.Tx, id string) (*store.Grant, error) {
	var data []byte
	var revoked bool
	var refreshed *time.Time
	err := tx.QueryRow(ctx, `SELECT data, revoked_at IS NOT NULL, refreshed_at FROM grants
		WHERE site_id = $1 AND id = $2 FOR UPDATE`, s.id, id).Scan(&data, &revoked, &refreshed)
	if err != nil {
		return nil, notFound(err)
	}
	return decodeGrant(data, revoked, refreshed)
}

// RevokeToken implements store.TokenStore.
func (s *Site) RevokeToken(ctx context.Context, hash string) error {
	return s.tx(ctx, "revoking a token", func(ctx context.Context, tx pgx.Tx) error {
		var data []byte
		err := tx.QueryRow(ctx, `SELECT data FROM tokens WHERE site_id = $1 AND hash = $2`, s.id, hash).Scan(&data)
		if err != nil {
			return notFound(err)
		}
		t, err := decodeToken(data, false, nil)
		if err != nil {
			return err
		}
		if store.DecideRevoke(t) == store.RevokeWholeGrant {
			return s.revokeGrant(ctx, tx, t.GrantID)
		}
		tag, err := tx.Exec(ctx, `UPDATE tokens SET revoked_at = now()
			WHERE site_id = $1 AND hash = $2 AND revoked_at IS NULL`, s.id, hash)
		if err != nil {
			return err
		}
		return s.announceIf(ctx, tx, tag.RowsAffected(), store.ChangeTokens)
	})
}

// RevokeGrant implements store.TokenStore.
func (s *Site) RevokeGrant(ctx context.Context, id string) error {
	return s.tx(ctx, "revoking a grant", func(ctx context.Context, tx pgx.Tx) error {
		return s.revokeGrant(ctx, tx, id)
	})
}

// revokeGrant revokes a grant unless it is revoked or gone already.
func (s *Site) revokeGrant(ctx context.Context, tx pgx.Tx, id string) error {
	tag, err := tx.Exec(ctx, `UPDATE grants SET revoked_at = now()
		WHERE site_id = $1 AND id = $2 AND revoked_at IS NULL`, s.id, id)
	if err != nil {
		return err
	}
	return s.announceIf(ctx, tx, tag.RowsAffected(), store.ChangeTokens)
}

// RevokeClientGrants implements store.TokenStore: one update of the
// client's live grants, which locks none of their tokens.
func (s *Site) RevokeClientGrants(ctx context.Context, clientID string) (int, error) {
	var n int64
	err := s.txAudit(ctx, "revoking a client's grants", func(ctx context.Context, tx pgx.Tx, at *store.AuditTx) error {
		tag, err := tx.Exec(ctx, `UPDATE grants SET revoked_at = now()
			WHERE site_id = $1 AND client_id = $2 AND revoked_at IS NULL`, s.id, clientID)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		at.Ended(int(n))
		return s.announceIf(ctx, tx, n, store.ChangeTokens)
	})
	return int(n), err
}

// queueGrant queues the insertion of a new grant. Its payload leaves out
// Revoked and RefreshedAt, which live in columns.
func (s *Site) queueGrant(b *pgx.Batch, g *store.Grant) error {
	payload := *g
	payload.Revoked, payload.RefreshedAt = false, time.Time{}
	data, err := json.Marshal(&payload)
	if err != nil {
		return err
	}
	b.Queue(`INSERT INTO grants (site_id, id, client_id, revoked_at, created_at, refreshed_at, data)
		VALUES ($1, $2, $3, CASE WHEN $4 THEN now() END, $5, $6, $7)`,
		s.id, g.ID, g.ClientID, g.Revoked, g.CreatedAt, nullTime(g.RefreshedAt), data)
	return nil
}

// queueTokens queues the insertion of new tokens. Their payloads leave out
// Revoked and RotatedAt, which live in columns.
func (s *Site) queueTokens(b *pgx.Batch, toks []store.IssuedToken) error {
	for _, it := range toks {
		t := it.Token
		payload := *t
		payload.Revoked, payload.RotatedAt = false, time.Time{}
		data, err := json.Marshal(&payload)
		if err != nil {
			return err
		}
		b.Queue(`INSERT INTO tokens (site_id, hash, kind, grant_id, client_id, expires_at, revoked_at, rotated_at, data)
			VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7 THEN now() END, $8, $9)`,
			s.id, it.Hash, t.Kind, t.GrantID, t.ClientID, t.ExpiresAt, t.Revoked, nullTime(t.RotatedAt), data)
	}
	return nil
}

func decodeToken(data []byte, revoked bool, rotated *time.Time) (*store.Token, error) {
	var t store.Token
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, err
	}
	t.Revoked, t.RotatedAt = revoked, timeOf(rotated)
	return &t, nil
}

func decodeGrant(data []byte, revoked bool, refreshed *time.Time) (*store.Grant, error) {
	var g store.Grant
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, err
	}
	g.Revoked, g.RefreshedAt = revoked, timeOf(refreshed)
	return &g, nil
}
