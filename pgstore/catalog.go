package pgstore

import (
	"context"
	"crypto/sha256"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/store"
)

// SaveCatalog implements store.CatalogStore. The catalog is fetched
// again and again and seldom changes: an unchanged feed (same digest,
// compared by the database) is no write and no notification.
func (s *Site) SaveCatalog(ctx context.Context, raw []byte) error {
	sum := sha256.Sum256(raw)
	return s.tx(ctx, "storing the catalog", func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO catalog (site_id, feed, sha256, updated_at) VALUES ($1, $2, $3, now())
			ON CONFLICT (site_id) DO UPDATE SET feed = EXCLUDED.feed, sha256 = EXCLUDED.sha256, updated_at = now()
			WHERE catalog.sha256 <> EXCLUDED.sha256`, s.id, nonNil(raw), sum[:])
		if err != nil {
			return err
		}
		return s.announceIf(ctx, tx, tag.RowsAffected(), store.ChangeCatalog)
	})
}

// LoadCatalog implements store.CatalogStore.
func (s *Site) LoadCatalog(ctx context.Context) ([]byte, error) {
	var feed []byte
	err := s.run(ctx, "loading the catalog", func(ctx context.Context, q querier) error {
		feed = nil
		err := q.QueryRow(ctx, `SELECT feed FROM catalog WHERE site_id = $1`, s.id).Scan(&feed)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		feed = nonNil(feed)
		return err
	})
	if err != nil {
		return nil, err
	}
	return feed, nil
}
