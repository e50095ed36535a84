package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// schemaVersion is the layout of the bbolt file. Adding a bucket needs no
// bump: every bucket of the list is created on open. Bump it only when the
// meaning of stored data changes, and add the migration to migrate.
//
// Version 2 indexes live grants by subject and client (boltgrants.go). A
// build of version 1 would store grants without indexing them, so it is
// refused the file, which keeps the indexes whole.
const schemaVersion = 2

var (
	bucketMeta     = []byte("meta")
	bucketKeys     = []byte("keys")
	bucketClients  = []byte("clients")
	bucketPending  = []byte("pending")
	bucketConsents = []byte("consents")
	bucketCodes    = []byte("codes")
	bucketGrants   = []byte("grants")
	bucketTokens   = []byte("tokens")
	bucketSettings = []byte("settings")
	bucketCatalog  = []byte("catalog")

	allBuckets = [][]byte{bucketMeta, bucketKeys, bucketClients, bucketPending,
		bucketConsents, bucketCodes, bucketGrants, bucketTokens, bucketSettings, bucketCatalog,
		bucketGrantsBySubject, bucketGrantsByClient, bucketGrantCounts}

	keySchemaVersion = []byte("schema_version")
)

// boltStore is the embedded Store: one bbolt file per site.
type boltStore struct {
	db *bolt.DB
	// writers counts the hot-path writes in flight (see write).
	writers atomic.Int32
}

// write runs fn in a durable read-write transaction for the hot paths
// (codes and tokens). A lone writer commits at once; writers that overlap
// join a bbolt Batch and share one commit and its fsyncs, which is what
// lets concurrent token requests scale. Durability is never relaxed. fn
// may run more than once (Batch retries a failed batch one by one), so it
// must reset whatever it records outside the transaction.
func (s *boltStore) write(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n := s.writers.Add(1)
	defer s.writers.Add(-1)
	if n == 1 {
		return s.db.Update(fn)
	}
	return s.db.Batch(fn)
}

// update runs fn in a read-write transaction, unless ctx has ended: bbolt
// takes no context, so a cancelled caller is refused before it acts.
func (s *boltStore) update(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.Update(fn)
}

// view runs fn in a read-only transaction, unless ctx has ended.
func (s *boltStore) view(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(fn)
}

// OpenBolt opens (creating if needed) the store file at path. The timeout
// bounds the wait for the file lock, which another process or a config
// that was not cleaned up may hold.
// ErrLocked is a store file another process holds.
var ErrLocked = errors.New("the file is locked by another process")

func OpenBolt(path string, timeout time.Duration) (Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("opening %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	// Concurrent token endpoints share fsyncs through Batch; a short delay
	// keeps a lone writer fast.
	db.MaxBatchDelay = time.Millisecond
	s := &boltStore{db: db}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// current reports whether the file has every bucket and the schema this
// build writes, so that opening it needs no write transaction (and no
// fsync): a thousand schools start with a thousand reads.
func (s *boltStore) current() bool {
	ok := false
	_ = s.db.View(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if tx.Bucket(b) == nil {
				return nil
			}
		}
		var have int
		v := tx.Bucket(bucketMeta).Get(keySchemaVersion)
		ok = v != nil && json.Unmarshal(v, &have) == nil && have == schemaVersion
		return nil
	})
	return ok
}

func (s *boltStore) migrate() error {
	if s.current() {
		return nil
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		have := 0
		if v := meta.Get(keySchemaVersion); v != nil {
			if err := json.Unmarshal(v, &have); err != nil {
				return fmt.Errorf("reading schema version: %w", err)
			}
			if have > schemaVersion {
				return fmt.Errorf("store schema version %d is newer than this build supports (%d)", have, schemaVersion)
			}
		}
		if have < 2 {
			if err := rebuildGrantIndexes(tx); err != nil {
				return fmt.Errorf("indexing the grants: %w", err)
			}
		}
		v, _ := json.Marshal(schemaVersion)
		return meta.Put(keySchemaVersion, v)
	})
}

// SaveCatalog keeps the last good catalog feed.
func (s *boltStore) SaveCatalog(ctx context.Context, raw []byte) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCatalog).Put([]byte("feed"), raw)
	})
}

// LoadCatalog returns the last good catalog feed, or nil.
func (s *boltStore) LoadCatalog(ctx context.Context) ([]byte, error) {
	var out []byte
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketCatalog).Get([]byte("feed")); v != nil {
			out = append([]byte(nil), v...)
		}
		return nil
	})
	return out, err
}

// Close closes the file.
func (s *boltStore) Close() error { return s.db.Close() }

func getJSON(b *bolt.Bucket, key string, v any) error {
	raw := b.Get([]byte(key))
	if raw == nil {
		return ErrNotFound
	}
	return json.Unmarshal(raw, v)
}

func putJSON(b *bolt.Bucket, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put([]byte(key), raw)
}

// LoadKeys returns every stored signing key.
func (s *boltStore) LoadKeys(ctx context.Context) ([]StoredKey, error) {
	var keys []StoredKey
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketKeys).ForEach(func(_, v []byte) error {
			var k StoredKey
			if err := json.Unmarshal(v, &k); err != nil {
				return err
			}
			keys = append(keys, k)
			return nil
		})
	})
	return keys, err
}

// InitKeys implements KeyStore: one process holds the file, so the
// transaction alone keeps a site to one first key.
func (s *boltStore) InitKeys(ctx context.Context, first StoredKey) ([]StoredKey, error) {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKeys)
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

// RotateKey implements KeyStore.
func (s *boltStore) RotateKey(ctx context.Context, k StoredKey) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKeys)
		var retire []StoredKey
		err := b.ForEach(func(_, v []byte) error {
			var old StoredKey
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

// GetClient returns a stored client.
func (s *boltStore) GetClient(ctx context.Context, id string) (*Client, error) {
	var c Client
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bucketClients), id, &c)
	})
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// PutClient stores a client.
func (s *boltStore) PutClient(ctx context.Context, c *Client) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketClients), c.ID, c)
	})
}

// CreateClient implements ClientStore. Clients are few (registrations
// are capped), so the scan costs little and runs only on creation.
func (s *boltStore) CreateClient(ctx context.Context, c *Client, limit int) (*Client, bool, error) {
	var got *Client
	err := s.update(ctx, func(tx *bolt.Tx) error {
		got = nil
		b := tx.Bucket(bucketClients)
		n := 0
		err := b.ForEach(func(k, v []byte) error {
			var old Client
			if err := json.Unmarshal(v, &old); err != nil {
				return err
			}
			if string(k) == c.ID || (c.RegistrationKey != "" && old.Kind == c.Kind && old.RegistrationKey == c.RegistrationKey) {
				got = &old
			}
			if old.Kind == c.Kind {
				n++
			}
			return nil
		})
		switch {
		case err != nil || got != nil:
			return err
		case limit > 0 && n >= limit:
			return ErrClientLimit
		}
		return putJSON(b, c.ID, c)
	})
	if err != nil {
		return nil, false, err
	}
	if got != nil {
		return got, true, nil
	}
	return c, false, nil
}

// DeleteClient implements ClientStore.
func (s *boltStore) DeleteClient(ctx context.Context, id string) (int, error) {
	n := 0
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketClients)
		if b.Get([]byte(id)) == nil {
			return ErrNotFound
		}
		if err := b.Delete([]byte(id)); err != nil {
			return err
		}
		var err error
		n, err = revokeClientGrants(tx, id)
		return err
	})
	return n, err
}

// ListClients returns every stored client.
func (s *boltStore) ListClients(ctx context.Context) ([]*Client, error) {
	var out []*Client
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketClients).ForEach(func(_, v []byte) error {
			var c Client
			if err := json.Unmarshal(v, &c); err != nil {
				return err
			}
			out = append(out, &c)
			return nil
		})
	})
	return out, err
}

// CountClientsByKind counts stored clients of one kind.
func (s *boltStore) CountClientsByKind(ctx context.Context, kind string) (int, error) {
	clients, err := s.ListClients(ctx)
	n := 0
	for _, c := range clients {
		if c.Kind == kind {
			n++
		}
	}
	return n, err
}

// PutPending stores a pending authorization request.
func (s *boltStore) PutPending(ctx context.Context, p *PendingAuth) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketPending), p.ID, p)
	})
}

// TakePending returns and deletes a pending authorization request.
func (s *boltStore) TakePending(ctx context.Context, id string) (*PendingAuth, error) {
	var p PendingAuth
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPending)
		if err := getJSON(b, id, &p); err != nil {
			return err
		}
		return b.Delete([]byte(id))
	})
	if err != nil {
		return nil, err
	}
	return &p, nil
}

func consentKey(clientID, subject string) string { return clientID + "\x00" + subject }

// GetConsent returns what a person granted a client before.
func (s *boltStore) GetConsent(ctx context.Context, clientID, subject string) (*Consent, error) {
	var c Consent
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bucketConsents), consentKey(clientID, subject), &c)
	})
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// PutConsent remembers a person's grant to a client.
func (s *boltStore) PutConsent(ctx context.Context, clientID, subject string, c *Consent) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketConsents), consentKey(clientID, subject), c)
	})
}

// PutCode stores an authorization code under its hash.
func (s *boltStore) PutCode(ctx context.Context, hash string, c *Code) error {
	return s.write(ctx, func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketCodes), hash, c)
	})
}

// RedeemCode implements Store.
func (s *boltStore) RedeemCode(ctx context.Context, hash string, issue func(*Code) (*Grant, []IssuedToken, error)) error {
	var outcome RedeemOutcome
	err := s.write(ctx, func(tx *bolt.Tx) error {
		codes := tx.Bucket(bucketCodes)
		var c Code
		if err := getJSON(codes, hash, &c); err != nil {
			return err
		}
		if outcome = DecideRedeem(&c); outcome == RedeemReplay {
			return revokeGrant(tx, c.GrantID)
		}
		g, toks, err := issue(&c)
		if err != nil {
			return err
		}
		c.Used, c.GrantID = true, g.ID
		if err := putJSON(codes, hash, &c); err != nil {
			return err
		}
		return putGrantAndTokens(tx, g, toks)
	})
	if err != nil {
		return err
	}
	return outcome.Err()
}

func putGrantAndTokens(tx *bolt.Tx, g *Grant, toks []IssuedToken) error {
	if g != nil {
		if err := putJSON(tx.Bucket(bucketGrants), g.ID, g); err != nil {
			return err
		}
		if !g.Revoked {
			if err := indexGrant(tx, g); err != nil {
				return err
			}
		}
	}
	tb := tx.Bucket(bucketTokens)
	for _, t := range toks {
		if err := putJSON(tb, t.Hash, t.Token); err != nil {
			return err
		}
	}
	return nil
}

func revokeGrant(tx *bolt.Tx, id string) error {
	b := tx.Bucket(bucketGrants)
	var g Grant
	if err := getJSON(b, id, &g); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	if g.Revoked {
		return nil
	}
	if err := unindexGrant(tx, &g); err != nil {
		return err
	}
	g.Revoked = true
	return putJSON(b, id, &g)
}

// GetToken implements Store.
func (s *boltStore) GetToken(ctx context.Context, hash string) (*Token, *Grant, error) {
	var t Token
	var g Grant
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if err := getJSON(tx.Bucket(bucketTokens), hash, &t); err != nil {
			return err
		}
		return getJSON(tx.Bucket(bucketGrants), t.GrantID, &g)
	})
	if err != nil {
		return nil, nil, err
	}
	return &t, &g, nil
}

// RotateRefresh implements Store.
func (s *boltStore) RotateRefresh(ctx context.Context, hash string, now time.Time, grace time.Duration, rotate func(*Token, *Grant) ([]IssuedToken, error)) error {
	var outcome RotateOutcome
	err := s.write(ctx, func(tx *bolt.Tx) error {
		tb := tx.Bucket(bucketTokens)
		var t Token
		var g Grant
		if err := getJSON(tb, hash, &t); err != nil {
			return err
		}
		if err := getJSON(tx.Bucket(bucketGrants), t.GrantID, &g); err != nil {
			return err
		}
		if outcome = DecideRotate(&t, now, grace); outcome == RotateReplay {
			return revokeGrant(tx, g.ID)
		}
		toks, err := rotate(&t, &g)
		if err != nil {
			return err
		}
		if outcome == RotateFirst {
			t.RotatedAt = now
			if err := putJSON(tb, hash, &t); err != nil {
				return err
			}
		}
		if err := touchRefreshed(tx, &g, now); err != nil {
			return err
		}
		return putGrantAndTokens(tx, nil, toks)
	})
	if err != nil {
		return err
	}
	return outcome.Err()
}

// RevokeToken implements Store.
func (s *boltStore) RevokeToken(ctx context.Context, hash string) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		tb := tx.Bucket(bucketTokens)
		var t Token
		if err := getJSON(tb, hash, &t); err != nil {
			return err
		}
		if DecideRevoke(&t) == RevokeWholeGrant {
			return revokeGrant(tx, t.GrantID)
		}
		t.Revoked = true
		return putJSON(tb, hash, &t)
	})
}

// RevokeGrant revokes a grant and so every token issued under it.
func (s *boltStore) RevokeGrant(ctx context.Context, id string) error {
	return s.update(ctx, func(tx *bolt.Tx) error { return revokeGrant(tx, id) })
}

// RevokeClientGrants implements Store, through the client's index.
func (s *boltStore) RevokeClientGrants(ctx context.Context, clientID string) (int, error) {
	n := 0
	err := s.update(ctx, func(tx *bolt.Tx) error {
		var err error
		n, err = revokeClientGrants(tx, clientID)
		return err
	})
	return n, err
}

// PurgeExpired implements Store.
func (s *boltStore) PurgeExpired(ctx context.Context, before time.Time) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		if err := purge(tx.Bucket(bucketCodes), func(v []byte) bool {
			var c Code
			_ = json.Unmarshal(v, &c)
			return c.ExpiresAt.Before(before)
		}); err != nil {
			return err
		}
		if err := purge(tx.Bucket(bucketPending), func(v []byte) bool {
			var p PendingAuth
			_ = json.Unmarshal(v, &p)
			return p.ExpiresAt.Before(before)
		}); err != nil {
			return err
		}
		if err := purge(tx.Bucket(bucketTokens), func(v []byte) bool {
			var t Token
			_ = json.Unmarshal(v, &t)
			return t.ExpiresAt.Before(before)
		}); err != nil {
			return err
		}
		return purgeGrants(tx)
	})
}

// purgeGrants deletes the grants that are revoked or have no token left,
// with the tokens of the revoked ones: nothing can use them any more.
func purgeGrants(tx *bolt.Tx) error {
	live := map[string]bool{}
	tb := tx.Bucket(bucketTokens)
	err := tb.ForEach(func(_, v []byte) error {
		var t Token
		if err := json.Unmarshal(v, &t); err != nil {
			return err
		}
		live[t.GrantID] = true
		return nil
	})
	if err != nil {
		return err
	}
	dead := map[string]bool{}
	// Grants purged while live (every token expired) leave the indexes.
	var unindex []Grant
	gb := tx.Bucket(bucketGrants)
	err = gb.ForEach(func(k, v []byte) error {
		var g Grant
		if err := json.Unmarshal(v, &g); err != nil {
			return err
		}
		if g.Revoked || !live[string(k)] {
			dead[string(k)] = true
			if !g.Revoked {
				unindex = append(unindex, g)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := purge(tb, func(v []byte) bool {
		var t Token
		_ = json.Unmarshal(v, &t)
		return dead[t.GrantID]
	}); err != nil {
		return err
	}
	for id := range dead {
		if err := gb.Delete([]byte(id)); err != nil {
			return err
		}
	}
	for i := range unindex {
		if err := unindexGrant(tx, &unindex[i]); err != nil {
			return err
		}
	}
	return nil
}

// purge deletes the records of b that gone holds for.
func purge(b *bolt.Bucket, gone func(v []byte) bool) error {
	var dead [][]byte
	err := b.ForEach(func(k, v []byte) error {
		if gone(v) {
			dead = append(dead, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range dead {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// GetSetting returns a site setting.
func (s *boltStore) GetSetting(ctx context.Context, key string) ([]byte, error) {
	var out []byte
	err := s.view(ctx, func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSettings).Get([]byte(key))
		if v == nil {
			return ErrNotFound
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}

// PutSetting stores a site setting.
func (s *boltStore) PutSetting(ctx context.Context, key string, value []byte) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSettings).Put([]byte(key), value)
	})
}

// InitSetting implements SettingStore.
func (s *boltStore) InitSetting(ctx context.Context, key string, value []byte) ([]byte, error) {
	var out []byte
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSettings)
		if v := b.Get([]byte(key)); v != nil {
			out = append([]byte(nil), v...)
			return nil
		}
		out = append([]byte(nil), value...)
		return b.Put([]byte(key), value)
	})
	return out, err
}

// PutSettingRevoking implements SettingStore.
func (s *boltStore) PutSettingRevoking(ctx context.Context, key string, value []byte, kind string) (int, error) {
	n := 0
	err := s.update(ctx, func(tx *bolt.Tx) error {
		n = 0
		if err := tx.Bucket(bucketSettings).Put([]byte(key), value); err != nil {
			return err
		}
		var ofKind []string
		err := tx.Bucket(bucketClients).ForEach(func(k, v []byte) error {
			var c Client
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

// Backup writes a consistent copy of the whole file while the store
// serves: one read transaction sees a single moment, and writers go on.
func (s *boltStore) Backup(ctx context.Context, w io.Writer) error {
	return s.view(ctx, func(tx *bolt.Tx) error {
		_, err := tx.WriteTo(w)
		return err
	})
}
