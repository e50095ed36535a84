package pgstore

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/store"
)

// PutCode implements store.AuthorizationStore. Storing a code again
// (a retried request) replaces its payload and never its redemption: a
// used code stays used.
func (s *Site) PutCode(ctx context.Context, hash string, c *store.Code) error {
	return s.write(ctx, "storing a code", func(ctx context.Context, q querier) error {
		b := &pgx.Batch{}
		if err := s.queueCode(b, hash, c); err != nil {
			return err
		}
		return q.SendBatch(ctx, b).Close()
	})
}

// queueCode queues the insertion of a code. The payload leaves out Used
// and GrantID, which live in columns.
func (s *Site) queueCode(b *pgx.Batch, hash string, c *store.Code) error {
	payload := *c
	payload.Used, payload.GrantID = false, ""
	data, err := json.Marshal(&payload)
	if err != nil {
		return err
	}
	b.Queue(`INSERT INTO codes (site_id, hash, expires_at, used_at, grant_id, data)
		VALUES ($1, $2, $3, CASE WHEN $4 THEN now() END, NULLIF($5, ''), $6)
		ON CONFLICT (site_id, hash) DO UPDATE SET expires_at = EXCLUDED.expires_at, data = EXCLUDED.data`,
		s.id, hash, c.ExpiresAt, c.Used, c.GrantID, data)
	return nil
}

// RedeemCode implements store.AuthorizationStore. The code's row is
// locked while the outcome is decided and applied: of concurrent redeems,
// one issues and the others, let through once it commits, read the code
// used and revoke what it issued.
func (s *Site) RedeemCode(ctx context.Context, hash string, issue func(*store.Code) (*store.Grant, []store.IssuedToken, error)) error {
	var outcome store.RedeemOutcome
	err := s.txAudit(ctx, "redeeming a code", func(ctx context.Context, tx pgx.Tx, at *store.AuditTx) error {
		c, err := s.lockCode(ctx, tx, hash)
		if err != nil {
			return err
		}
		if outcome = store.DecideRedeem(c); outcome == store.RedeemReplay {
			at.Add(store.RedeemEvent(outcome, c, nil))
			return s.revokeGrant(ctx, tx, c.GrantID)
		}
		g, toks, err := issue(c)
		if err != nil {
			return callbackError{err}
		}
		at.Add(store.RedeemEvent(outcome, c, g))
		b := &pgx.Batch{}
		b.Queue(`UPDATE codes SET used_at = now(), grant_id = $3 WHERE site_id = $1 AND hash = $2`, s.id, hash, g.ID)
		if err := s.queueGrant(b, g); err != nil {
			return err
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

// lockCode reads a code and locks its row until the transaction ends.
func (s *Site) lockCode(ctx context.Context, tx pgx.Tx, hash string) (*store.Code, error) {
	var data []byte
	var used bool
	var grantID *string
	err := tx.QueryRow(ctx, `SELECT data, used_at IS NOT NULL, grant_id FROM codes
		WHERE site_id = $1 AND hash = $2 FOR UPDATE`, s.id, hash).Scan(&data, &used, &grantID)
	if err != nil {
		return nil, notFound(err)
	}
	var c store.Code
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	c.Used = used
	if grantID != nil {
		c.GrantID = *grantID
	}
	return &c, nil
}
