package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/store"
)

// GetSetting implements store.SettingStore.
func (s *Site) GetSetting(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := s.run(ctx, "reading a setting", func(ctx context.Context, q querier) error {
		err := q.QueryRow(ctx, `SELECT value FROM settings WHERE site_id = $1 AND key = $2`, s.id, key).Scan(&v)
		return notFound(err)
	})
	if err != nil {
		return nil, err
	}
	return nonNil(v), nil
}

// PutSetting implements store.SettingStore.
func (s *Site) PutSetting(ctx context.Context, key string, value []byte) error {
	return s.tx(ctx, "storing a setting", func(ctx context.Context, tx pgx.Tx) error {
		if err := s.putSetting(ctx, tx, key, value); err != nil {
			return err
		}
		return s.announce(ctx, tx, store.ChangeSettings)
	})
}

func (s *Site) putSetting(ctx context.Context, q querier, key string, value []byte) error {
	_, err := q.Exec(ctx, `INSERT INTO settings (site_id, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (site_id, key) DO UPDATE SET value = EXCLUDED.value`, s.id, key, nonNil(value))
	return err
}

// InitSetting implements store.SettingStore. The key's primary key
// settles concurrent first starts: an insert that meets another's waits
// for it to commit and then inserts nothing, and the read that follows,
// a statement of its own, sees the winner's value.
func (s *Site) InitSetting(ctx context.Context, key string, value []byte) ([]byte, error) {
	var out []byte
	err := s.tx(ctx, "initializing a setting", func(ctx context.Context, tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO settings (site_id, key, value) VALUES ($1, $2, $3)
			ON CONFLICT (site_id, key) DO NOTHING RETURNING value`, s.id, key, nonNil(value)).Scan(&out)
		if errors.Is(err, pgx.ErrNoRows) {
			return tx.QueryRow(ctx, `SELECT value FROM settings WHERE site_id = $1 AND key = $2`, s.id, key).Scan(&out)
		}
		if err != nil {
			return err
		}
		return s.announce(ctx, tx, store.ChangeSettings)
	})
	if err != nil {
		return nil, err
	}
	return nonNil(out), nil
}

// PutSettingRevoking implements store.SettingStore.
func (s *Site) PutSettingRevoking(ctx context.Context, key string, value []byte, kind string) (int, error) {
	var n int64
	err := s.txAudit(ctx, "storing a setting and revoking grants", func(ctx context.Context, tx pgx.Tx, at *store.AuditTx) error {
		if err := s.putSetting(ctx, tx, key, value); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE grants SET revoked_at = now()
			WHERE site_id = $1 AND revoked_at IS NULL
			AND client_id IN (SELECT id FROM clients WHERE site_id = $1 AND kind = $2)`, s.id, kind)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		at.Ended(int(n))
		if err := s.announce(ctx, tx, store.ChangeSettings); err != nil {
			return err
		}
		return s.announceIf(ctx, tx, n, store.ChangeTokens)
	})
	return int(n), err
}

// nonNil keeps an empty value apart from a missing one: pgx writes a nil
// slice as NULL and may read an empty bytea as nil.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
