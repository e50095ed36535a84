package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/store"
)

// LoadKeys implements store.KeyStore.
func (s *Site) LoadKeys(ctx context.Context) ([]store.StoredKey, error) {
	var keys []store.StoredKey
	err := s.run(ctx, "loading signing keys", func(ctx context.Context, q querier) (err error) {
		keys, err = s.loadKeys(ctx, q)
		return err
	})
	return keys, err
}

// InitKeys implements store.KeyStore. Keys have different kids, so
// no unique index can keep a site to one first key: instances starting
// together take turns on a lock of the site's keys instead.
func (s *Site) InitKeys(ctx context.Context, first store.StoredKey) ([]store.StoredKey, error) {
	var keys []store.StoredKey
	err := s.tx(ctx, "initializing signing keys", func(ctx context.Context, tx pgx.Tx) (err error) {
		keys, err = s.initKeys(ctx, tx, first)
		return err
	})
	return keys, err
}

// InitSite is InitKeys and InitSetting of each setting in one
// transaction: a new school's first start commits twice (its sites row,
// then this) instead of three times.
func (s *Site) InitSite(ctx context.Context, first store.StoredKey, settings map[string][]byte) ([]store.StoredKey, error) {
	var keys []store.StoredKey
	err := s.tx(ctx, "initializing a site", func(ctx context.Context, tx pgx.Tx) (err error) {
		if keys, err = s.initKeys(ctx, tx, first); err != nil {
			return err
		}
		var n int64
		for key, value := range settings {
			tag, err := tx.Exec(ctx, `INSERT INTO settings (site_id, key, value) VALUES ($1, $2, $3)
				ON CONFLICT (site_id, key) DO NOTHING`, s.id, key, nonNil(value))
			if err != nil {
				return err
			}
			n += tag.RowsAffected()
		}
		return s.announceIf(ctx, tx, n, store.ChangeSettings)
	})
	return keys, err
}

// initKeys stores first unless the site has keys, and returns its keys.
func (s *Site) initKeys(ctx context.Context, tx pgx.Tx, first store.StoredKey) ([]store.StoredKey, error) {
	if err := s.lock(ctx, tx, "keys"); err != nil {
		return nil, err
	}
	keys, err := s.loadKeys(ctx, tx)
	if err != nil || len(keys) > 0 {
		return keys, err
	}
	if err := s.putKey(ctx, tx, first); err != nil {
		return nil, err
	}
	// Read back, so this instance holds the key as the others will
	// load it (times to the microsecond, in UTC).
	if keys, err = s.loadKeys(ctx, tx); err != nil {
		return nil, err
	}
	return keys, s.announce(ctx, tx, store.ChangeKeys)
}

// RotateKey implements store.KeyStore.
func (s *Site) RotateKey(ctx context.Context, k store.StoredKey) error {
	return s.tx(ctx, "rotating signing keys", func(ctx context.Context, tx pgx.Tx) error {
		if err := s.putKey(ctx, tx, k); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE keys SET retired_at = $3
			WHERE site_id = $1 AND kid <> $2 AND retired_at IS NULL`, s.id, k.KID, k.SignFrom)
		if err != nil {
			return err
		}
		return s.announce(ctx, tx, store.ChangeKeys)
	})
}

func (s *Site) putKey(ctx context.Context, q querier, k store.StoredKey) error {
	_, err := q.Exec(ctx, `INSERT INTO keys (site_id, kid, sealed, created_at, sign_from, retired_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (site_id, kid) DO UPDATE SET sealed = EXCLUDED.sealed, created_at = EXCLUDED.created_at,
			sign_from = EXCLUDED.sign_from, retired_at = EXCLUDED.retired_at`,
		s.id, k.KID, s.seal(k.KID, k.JWK), k.CreatedAt, k.SignFrom, nullTime(k.RetiredAt))
	return err
}

// loadKeys reads and opens the site's keys, oldest first.
func (s *Site) loadKeys(ctx context.Context, q querier) ([]store.StoredKey, error) {
	var keys []store.StoredKey
	err := eachRow(ctx, q, `SELECT kid, sealed, created_at, sign_from, retired_at
		FROM keys WHERE site_id = $1 ORDER BY created_at, kid`, s.id, func(row pgx.Rows) error {
		var k store.StoredKey
		var sealed []byte
		var retired *time.Time
		if err := row.Scan(&k.KID, &sealed, &k.CreatedAt, &k.SignFrom, &retired); err != nil {
			return err
		}
		jwk, err := s.open(k.KID, sealed)
		if err != nil {
			return fmt.Errorf("signing key %s: %w", k.KID, err)
		}
		k.JWK, k.CreatedAt, k.SignFrom, k.RetiredAt = jwk, k.CreatedAt.UTC(), k.SignFrom.UTC(), timeOf(retired)
		keys = append(keys, k)
		return nil
	})
	return keys, err
}
