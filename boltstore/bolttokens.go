package boltstore

// Authorization codes, grants and their tokens in the bbolt store: the
// hot paths (write), revocation and the expiry purge.

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

// appendedBuckets are keyed in time order (codes and tokens by their
// issue time, grants by their id, which starts with it), so a commit's
// inserts land at the end of each.
var appendedBuckets = [][]byte{bucketCodes, bucketTokens, bucketGrants}

// fillAppended lets the hot write paths fill the pages of the buckets
// written at their end. bbolt splits a page that grows past half full by
// default, which for keys arriving in order leaves every page behind the
// last half empty and makes a commit write twice the pages it needs.
func fillAppended(tx *bolt.Tx) {
	for _, name := range appendedBuckets {
		if b := tx.Bucket(name); b != nil {
			b.FillPercent = 0.9
		}
	}
}

// PutCode stores an authorization code under its hash.
func (s *boltStore) PutCode(ctx context.Context, hash string, c *store.Code) error {
	return s.writeAudit(ctx, func(tx *bolt.Tx, _ *store.AuditTx) error {
		return putCode(tx.Bucket(bucketCodes), hash, c)
	})
}

// RedeemCode implements store.Store.
func (s *boltStore) RedeemCode(ctx context.Context, hash string, issue func(*store.Code) (*store.Grant, []store.IssuedToken, error)) error {
	var outcome store.RedeemOutcome
	err := s.writeAudit(ctx, func(tx *bolt.Tx, at *store.AuditTx) error {
		codes := tx.Bucket(bucketCodes)
		var c store.Code
		if err := getCode(codes, hash, &c); err != nil {
			return err
		}
		if outcome = store.DecideRedeem(&c); outcome == store.RedeemReplay {
			at.Add(store.RedeemEvent(outcome, &c, nil))
			return revokeGrant(tx, c.GrantID)
		}
		g, toks, err := issue(&c)
		if err != nil {
			return err
		}
		c.Used, c.GrantID = true, g.ID
		if err := putCode(codes, hash, &c); err != nil {
			return err
		}
		at.Add(store.RedeemEvent(outcome, &c, g))
		return putGrantAndTokens(tx, g, toks)
	})
	if err != nil {
		return err
	}
	return outcome.Err()
}

func putGrantAndTokens(tx *bolt.Tx, g *store.Grant, toks []store.IssuedToken) error {
	if g != nil {
		if err := putGrant(tx.Bucket(bucketGrants), g.ID, g); err != nil {
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
		if err := putToken(tb, t.Hash, t.Token); err != nil {
			return err
		}
	}
	return nil
}

func revokeGrant(tx *bolt.Tx, id string) error {
	b := tx.Bucket(bucketGrants)
	var g store.Grant
	if err := getGrant(b, id, &g); err != nil {
		if errors.Is(err, store.ErrNotFound) {
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
	return putGrant(b, id, &g)
}

// GetToken implements store.Store.
func (s *boltStore) GetToken(ctx context.Context, hash string) (*store.Token, *store.Grant, error) {
	var t store.Token
	var g store.Grant
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if err := getToken(tx.Bucket(bucketTokens), hash, &t); err != nil {
			return err
		}
		return getGrant(tx.Bucket(bucketGrants), t.GrantID, &g)
	})
	if err != nil {
		return nil, nil, err
	}
	return &t, &g, nil
}

// RotateRefresh implements store.Store.
func (s *boltStore) RotateRefresh(ctx context.Context, hash, holder string, now time.Time, grace time.Duration, rotate func(*store.Token, *store.Grant) ([]store.IssuedToken, error)) error {
	var outcome store.RotateOutcome
	err := s.writeAudit(ctx, func(tx *bolt.Tx, at *store.AuditTx) error {
		tb := tx.Bucket(bucketTokens)
		var t store.Token
		var g store.Grant
		if err := getToken(tb, hash, &t); err != nil {
			return err
		}
		if !t.HeldBy(holder) {
			return store.ErrWrongKey
		}
		if err := getGrant(tx.Bucket(bucketGrants), t.GrantID, &g); err != nil {
			return err
		}
		if outcome = store.DecideRotate(&t, now, grace); outcome == store.RotateReplay {
			at.Add(store.RotateEvent(outcome, &g, now))
			return revokeGrant(tx, g.ID)
		}
		toks, err := rotate(&t, &g)
		if err != nil {
			return err
		}
		at.Add(store.RotateEvent(outcome, &g, now))
		if outcome == store.RotateFirst {
			t.RotatedAt = now
			if err := putToken(tb, hash, &t); err != nil {
				return err
			}
		}
		if g.RefreshDue(now) {
			if err := touchRefreshed(tx, &g, now); err != nil {
				return err
			}
		}
		return putGrantAndTokens(tx, nil, toks)
	})
	if err != nil {
		return err
	}
	return outcome.Err()
}

// RevokeToken implements store.Store.
func (s *boltStore) RevokeToken(ctx context.Context, hash string) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		tb := tx.Bucket(bucketTokens)
		var t store.Token
		if err := getToken(tb, hash, &t); err != nil {
			return err
		}
		if store.DecideRevoke(&t) == store.RevokeWholeGrant {
			return revokeGrant(tx, t.GrantID)
		}
		t.Revoked = true
		return putToken(tb, hash, &t)
	})
}

// RevokeGrant revokes a grant and so every token issued under it.
func (s *boltStore) RevokeGrant(ctx context.Context, id string) error {
	return s.update(ctx, func(tx *bolt.Tx) error { return revokeGrant(tx, id) })
}

// RevokeClientGrants implements store.Store, through the client's index.
func (s *boltStore) RevokeClientGrants(ctx context.Context, clientID string) (int, error) {
	n := 0
	err := s.updateAudit(ctx, func(tx *bolt.Tx, at *store.AuditTx) error {
		var err error
		n, err = revokeClientGrants(tx, clientID)
		at.Ended(n)
		return err
	})
	return n, err
}

// PurgeExpired implements store.Store.
func (s *boltStore) PurgeExpired(ctx context.Context, before time.Time) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		if err := purge(tx.Bucket(bucketCodes), func(v []byte) bool {
			var c store.Code
			_ = decodeCode(v, &c)
			return c.ExpiresAt.Before(before)
		}); err != nil {
			return err
		}
		if err := purge(tx.Bucket(bucketPending), func(v []byte) bool {
			var p store.PendingAuth
			_ = json.Unmarshal(v, &p)
			return p.ExpiresAt.Before(before)
		}); err != nil {
			return err
		}
		if err := purge(tx.Bucket(bucketTokens), func(v []byte) bool {
			var t store.Token
			_ = decodeToken(v, &t)
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
		var t store.Token
		if err := decodeToken(v, &t); err != nil {
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
	var unindex []store.Grant
	gb := tx.Bucket(bucketGrants)
	err = gb.ForEach(func(k, v []byte) error {
		var g store.Grant
		if err := decodeGrant(v, &g); err != nil {
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
		var t store.Token
		_ = decodeToken(v, &t)
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
