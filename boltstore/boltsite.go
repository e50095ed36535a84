package boltstore

// A site's signing keys and its settings: small, written rarely (at a
// site's first start, a key's rotation, an operator's change), read at
// start; under the file's bucket of things off the request path.

import (
	"context"
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

// LoadKeys returns every stored signing key.
func (s *boltStore) LoadKeys(ctx context.Context) ([]store.StoredKey, error) {
	var keys []store.StoredKey
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return rare(tx, bucketKeys).ForEach(func(_, v []byte) error {
			var k store.StoredKey
			if err := json.Unmarshal(v, &k); err != nil {
				return err
			}
			keys = append(keys, k)
			return nil
		})
	})
	return keys, err
}

// InitKeys implements store.KeyStore: one process holds the file, so the
// transaction alone keeps a site to one first key.
func (s *boltStore) InitKeys(ctx context.Context, first store.StoredKey) ([]store.StoredKey, error) {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := rare(tx, bucketKeys)
		if k, _ := b.Cursor().First(); k != nil {
			return nil
		}
		return putJSON(b, first.KID, first)
	})
	if err != nil {
		return nil, err
	}
	return s.LoadKeys(ctx)
}

// InitSite is InitKeys and InitSetting of each setting in one
// transaction: a new school's first start commits once, and on a new file
// returns without waiting for its syncs (newfile.go).
func (s *boltStore) InitSite(ctx context.Context, first store.StoredKey, settings map[string][]byte) ([]store.StoredKey, error) {
	stored := false
	err := s.updateAuditIn(ctx, func(tx *bolt.Tx, _ *store.AuditTx) error {
		stored = false
		for key, value := range settings {
			b := rare(tx, bucketSettings)
			if b.Get([]byte(key)) != nil {
				continue
			}
			if err := b.Put([]byte(key), value); err != nil {
				return err
			}
		}
		b := rare(tx, bucketKeys)
		if k, _ := b.Cursor().First(); k != nil {
			return nil
		}
		stored = true
		return putJSON(b, first.KID, first)
	}, false)
	if err != nil {
		return nil, err
	}
	if stored {
		// The file had no key: first is all it has (not read back).
		return []store.StoredKey{first}, nil
	}
	return s.LoadKeys(ctx)
}

// RotateKey implements store.KeyStore.
func (s *boltStore) RotateKey(ctx context.Context, k store.StoredKey) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		b := rare(tx, bucketKeys)
		var retire []store.StoredKey
		err := b.ForEach(func(_, v []byte) error {
			var old store.StoredKey
			if err := json.Unmarshal(v, &old); err != nil {
				return err
			}
			if old.KID != k.KID && old.RetiredAt.IsZero() {
				old.RetiredAt = k.SignFrom
				retire = append(retire, old)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, old := range retire {
			if err := putJSON(b, old.KID, old); err != nil {
				return err
			}
		}
		return putJSON(b, k.KID, k)
	})
}

// GetSetting returns a site setting.
func (s *boltStore) GetSetting(ctx context.Context, key string) ([]byte, error) {
	var out []byte
	err := s.view(ctx, func(tx *bolt.Tx) error {
		v := rare(tx, bucketSettings).Get([]byte(key))
		if v == nil {
			return store.ErrNotFound
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}

// PutSetting stores a site setting.
func (s *boltStore) PutSetting(ctx context.Context, key string, value []byte) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		return rare(tx, bucketSettings).Put([]byte(key), value)
	})
}

// InitSetting implements store.SettingStore.
func (s *boltStore) InitSetting(ctx context.Context, key string, value []byte) ([]byte, error) {
	var out []byte
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := rare(tx, bucketSettings)
		if v := b.Get([]byte(key)); v != nil {
			out = append([]byte(nil), v...)
			return nil
		}
		out = append([]byte(nil), value...)
		return b.Put([]byte(key), value)
	})
	return out, err
}

// PutSettingRevoking implements store.SettingStore.
func (s *boltStore) PutSettingRevoking(ctx context.Context, key string, value []byte, kind string) (int, error) {
	n := 0
	err := s.updateAudit(ctx, func(tx *bolt.Tx, at *store.AuditTx) error {
		n = 0
		defer func() { at.Ended(n) }()
		if err := rare(tx, bucketSettings).Put([]byte(key), value); err != nil {
			return err
		}
		var ofKind []string
		err := rare(tx, bucketClients).ForEach(func(k, v []byte) error {
			var c store.Client
			if err := json.Unmarshal(v, &c); err != nil {
				return err
			}
			if c.Kind == kind {
				ofKind = append(ofKind, string(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, id := range ofKind {
			m, err := revokeClientGrants(tx, id)
			if err != nil {
				return err
			}
			n += m
		}
		return nil
	})
	return n, err
}
