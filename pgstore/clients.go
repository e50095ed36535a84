package pgstore

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/store"
)

// GetClient implements store.ClientStore.
func (s *Site) GetClient(ctx context.Context, id string) (*store.Client, error) {
	var c *store.Client
	err := s.run(ctx, "reading a client", func(ctx context.Context, q querier) (err error) {
		c, err = s.getClient(ctx, q, id)
		return err
	})
	return c, err
}

func (s *Site) getClient(ctx context.Context, q querier, id string) (*store.Client, error) {
	var data []byte
	err := q.QueryRow(ctx, `SELECT data FROM clients WHERE site_id = $1 AND id = $2`, s.id, id).Scan(&data)
	if err != nil {
		return nil, notFound(err)
	}
	return decodeClient(data)
}

// PutClient implements store.ClientStore.
func (s *Site) PutClient(ctx context.Context, c *store.Client) error {
	return s.write(ctx, "storing a client", func(ctx context.Context, q querier) error {
		_, err := s.putClient(ctx, q, c, true)
		return err
	})
}

// putClient stores c, replacing the client with its ID when replace is
// set, and reports whether it stored anything.
func (s *Site) putClient(ctx context.Context, q querier, c *store.Client, replace bool) (bool, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return false, err
	}
	conflict := `DO NOTHING`
	if replace {
		conflict = `DO UPDATE SET kind = EXCLUDED.kind, registration_key = EXCLUDED.registration_key,
			issued_at = EXCLUDED.issued_at, data = EXCLUDED.data`
	}
	tag, err := q.Exec(ctx, `INSERT INTO clients (site_id, id, kind, registration_key, issued_at, data)
		VALUES ($1, $2, $3, NULLIF($4, ''), $5, $6) ON CONFLICT (site_id, id) `+conflict,
		s.id, c.ID, c.Kind, c.RegistrationKey, c.IssuedAt, data)
	return tag.RowsAffected() == 1, err
}

// CreateClient implements store.ClientStore. The count against the
// limit and the search for an identical registration hold only while no
// other instance registers a client of the kind, hence the lock.
func (s *Site) CreateClient(ctx context.Context, c *store.Client, limit int) (*store.Client, bool, error) {
	var got *store.Client
	err := s.txAudit(ctx, "creating a client", func(ctx context.Context, tx pgx.Tx, at *store.AuditTx) error {
		got = nil
		defer func() {
			if got != nil {
				at.Discard()
			}
		}()
		if err := s.lock(ctx, tx, "clients", c.Kind); err != nil {
			return err
		}
		var err error
		if got, err = s.sameClient(ctx, tx, c); err != nil || got != nil {
			return err
		}
		if err := s.underLimit(ctx, tx, c.Kind, limit); err != nil {
			return err
		}
		stored, err := s.putClient(ctx, tx, c, false)
		if err == nil && !stored {
			// The ID was taken meanwhile, by a client of another kind,
			// which this kind's lock does not hold off.
			got, err = s.getClient(ctx, tx, c.ID)
		}
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if got != nil {
		return got, true, nil
	}
	return c, false, nil
}

// sameClient returns the stored client that c would duplicate, if any:
// one with its ID, or of its kind with its registration key.
func (s *Site) sameClient(ctx context.Context, q querier, c *store.Client) (*store.Client, error) {
	var data []byte
	err := q.QueryRow(ctx, `SELECT data FROM clients WHERE site_id = $1
		AND (id = $2 OR ($4 <> '' AND kind = $3 AND registration_key = $4)) LIMIT 1`,
		s.id, c.ID, c.Kind, c.RegistrationKey).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeClient(data)
}

// underLimit fails with ErrClientLimit when the site holds limit clients
// of kind already; a limit of 0 is none.
func (s *Site) underLimit(ctx context.Context, q querier, kind string, limit int) error {
	if limit <= 0 {
		return nil
	}
	n, err := s.countClients(ctx, q, kind)
	if err == nil && n >= limit {
		return store.ErrClientLimit
	}
	return err
}

// DeleteClient implements store.ClientStore. Instances that cache
// the client's tokens hear of it as a change of tokens.
func (s *Site) DeleteClient(ctx context.Context, id string) (int, error) {
	var n int64
	err := s.txAudit(ctx, "deleting a client", func(ctx context.Context, tx pgx.Tx, at *store.AuditTx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM clients WHERE site_id = $1 AND id = $2`, s.id, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		tag, err = tx.Exec(ctx, `UPDATE grants SET revoked_at = now()
			WHERE site_id = $1 AND client_id = $2 AND revoked_at IS NULL`, s.id, id)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		at.Ended(int(n))
		return s.announce(ctx, tx, store.ChangeTokens)
	})
	return int(n), err
}

// ListClients implements store.ClientStore.
func (s *Site) ListClients(ctx context.Context) ([]*store.Client, error) {
	var out []*store.Client
	err := s.run(ctx, "listing clients", func(ctx context.Context, q querier) error {
		out = nil
		rows, err := q.Query(ctx, `SELECT data FROM clients WHERE site_id = $1`, s.id)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.Client, error) {
			var data []byte
			if err := row.Scan(&data); err != nil {
				return nil, err
			}
			return decodeClient(data)
		})
		return err
	})
	return out, err
}

// CountClientsByKind implements store.ClientStore.
func (s *Site) CountClientsByKind(ctx context.Context, kind string) (int, error) {
	var n int
	err := s.run(ctx, "counting clients", func(ctx context.Context, q querier) (err error) {
		n, err = s.countClients(ctx, q, kind)
		return err
	})
	return n, err
}

func (s *Site) countClients(ctx context.Context, q querier, kind string) (int, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT count(*) FROM clients WHERE site_id = $1 AND kind = $2`, s.id, kind).Scan(&n)
	return n, err
}

func decodeClient(data []byte) (*store.Client, error) {
	var c store.Client
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}
