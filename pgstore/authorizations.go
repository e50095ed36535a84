package pgstore

import (
	"context"
	"encoding/json"

	"github.com/schoolgate/schoolgate/store"
)

// PutPending implements store.AuthorizationStore.
func (s *Site) PutPending(ctx context.Context, p *store.PendingAuth) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return s.write(ctx, "storing a pending request", func(ctx context.Context, q querier) error {
		_, err := q.Exec(ctx, `INSERT INTO pending (site_id, id, expires_at, data) VALUES ($1, $2, $3, $4)
			ON CONFLICT (site_id, id) DO UPDATE SET expires_at = EXCLUDED.expires_at, data = EXCLUDED.data`,
			s.id, p.ID, p.ExpiresAt, data)
		return err
	})
}

// TakePending implements store.AuthorizationStore: the delete that
// returns the row is what makes a second take find nothing.
func (s *Site) TakePending(ctx context.Context, id string) (*store.PendingAuth, error) {
	var p *store.PendingAuth
	err := s.write(ctx, "taking a pending request", func(ctx context.Context, q querier) error {
		var data []byte
		err := q.QueryRow(ctx, `DELETE FROM pending WHERE site_id = $1 AND id = $2 RETURNING data`, s.id, id).Scan(&data)
		if err != nil {
			return notFound(err)
		}
		p = new(store.PendingAuth)
		return json.Unmarshal(data, p)
	})
	return p, err
}

// GetConsent implements store.AuthorizationStore.
func (s *Site) GetConsent(ctx context.Context, clientID, subject string) (*store.Consent, error) {
	var c *store.Consent
	err := s.run(ctx, "reading a consent", func(ctx context.Context, q querier) error {
		var data []byte
		err := q.QueryRow(ctx, `SELECT data FROM consents WHERE site_id = $1 AND client_id = $2 AND subject = $3`,
			s.id, clientID, subject).Scan(&data)
		if err != nil {
			return notFound(err)
		}
		c = new(store.Consent)
		return json.Unmarshal(data, c)
	})
	return c, err
}

// PutConsent implements store.AuthorizationStore.
func (s *Site) PutConsent(ctx context.Context, clientID, subject string, c *store.Consent) error {
	return s.write(ctx, "storing a consent", func(ctx context.Context, q querier) error {
		return s.putConsent(ctx, q, clientID, subject, c)
	})
}

func (s *Site) putConsent(ctx context.Context, q querier, clientID, subject string, c *store.Consent) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `INSERT INTO consents (site_id, client_id, subject, data) VALUES ($1, $2, $3, $4)
		ON CONFLICT (site_id, client_id, subject) DO UPDATE SET data = EXCLUDED.data`,
		s.id, clientID, subject, data)
	return err
}
