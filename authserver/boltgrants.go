package authserver

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The grant indexes of the bbolt store. Each live grant has one key in
// bucketGrantsBySubject and one in bucketGrantsByClient, written and
// deleted in the transaction that stores, revokes or purges the grant,
// and its client's count in bucketGrantCounts goes up and down with them.
// A key is the owner (subject or client id) with its length in front, so
// that no owner's keys are a prefix of another's, then the grant's
// creation time and id: a prefix scan is one owner's grants in list order.
var (
	bucketGrantsBySubject = []byte("grants_by_subject")
	bucketGrantsByClient  = []byte("grants_by_client")
	bucketGrantCounts     = []byte("grant_counts")
)

// ownerPrefix is the start of every index key of one owner.
func ownerPrefix(owner string) []byte {
	p := make([]byte, 4, 4+len(owner))
	binary.BigEndian.PutUint32(p, uint32(len(owner)))
	return append(p, owner...)
}

// indexKey is the key of a grant position under an owner. Times are kept
// to the microsecond, as PostgreSQL keeps them, so both stores order
// grants alike; the sign bit is flipped so that byte order is time order.
func indexKey(owner string, c GrantCursor) []byte {
	k := ownerPrefix(owner)
	k = binary.BigEndian.AppendUint64(k, uint64(c.CreatedAt.UnixMicro())^(1<<63))
	return append(k, c.ID...)
}

// grantIDOf is the grant id at the end of an index key under prefix.
func grantIDOf(prefix, key []byte) string { return string(key[len(prefix)+8:]) }

// indexGrant adds a live grant to the indexes and its client's count.
func indexGrant(tx *bolt.Tx, g *Grant) error {
	c := CursorOf(g)
	if err := tx.Bucket(bucketGrantsBySubject).Put(indexKey(g.Identity.Subject, c), nil); err != nil {
		return err
	}
	if err := tx.Bucket(bucketGrantsByClient).Put(indexKey(g.ClientID, c), nil); err != nil {
		return err
	}
	return addGrantCount(tx, g.ClientID, 1)
}

// unindexGrant removes a grant that stops being live from the indexes.
func unindexGrant(tx *bolt.Tx, g *Grant) error {
	c := CursorOf(g)
	if err := tx.Bucket(bucketGrantsBySubject).Delete(indexKey(g.Identity.Subject, c)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketGrantsByClient).Delete(indexKey(g.ClientID, c)); err != nil {
		return err
	}
	return addGrantCount(tx, g.ClientID, -1)
}

func addGrantCount(tx *bolt.Tx, clientID string, d int64) error {
	b := tx.Bucket(bucketGrantCounts)
	var n int64
	if v := b.Get([]byte(clientID)); len(v) == 8 {
		n = int64(binary.BigEndian.Uint64(v))
	}
	if n += d; n <= 0 {
		return b.Delete([]byte(clientID))
	}
	return b.Put([]byte(clientID), binary.BigEndian.AppendUint64(nil, uint64(n)))
}

// rebuildGrantIndexes indexes every live grant anew: a file written by a
// build without the indexes gets them on first open.
func rebuildGrantIndexes(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketGrantsBySubject, bucketGrantsByClient, bucketGrantCounts} {
		if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
			return err
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketGrants).ForEach(func(_, v []byte) error {
		var g Grant
		if err := json.Unmarshal(v, &g); err != nil {
			return err
		}
		if g.Revoked {
			return nil
		}
		return indexGrant(tx, &g)
	})
}

// ListGrants implements GrantStore with a prefix scan of one index.
func (s *boltStore) ListGrants(ctx context.Context, q GrantQuery) ([]*Grant, error) {
	bucket, owner := bucketGrantsBySubject, q.Subject
	if q.Subject == "" {
		bucket, owner = bucketGrantsByClient, q.ClientID
	}
	if owner == "" {
		return nil, nil
	}
	limit := PageLimit(q.Limit)
	var out []*Grant
	err := s.view(ctx, func(tx *bolt.Tx) error {
		out = nil
		prefix := ownerPrefix(owner)
		grants := tx.Bucket(bucketGrants)
		c := tx.Bucket(bucket).Cursor()
		start := prefix
		if !q.After.IsZero() {
			start = indexKey(owner, q.After)
		}
		for k, _ := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Next() {
			if bytes.Equal(k, start) && !q.After.IsZero() {
				continue
			}
			var g Grant
			if err := getJSON(grants, grantIDOf(prefix, k), &g); err != nil {
				return err
			}
			out = append(out, &g)
		}
		return nil
	})
	return out, err
}

// GrantCounts implements GrantStore: one key per client holding grants.
func (s *boltStore) GrantCounts(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		clear(out)
		return tx.Bucket(bucketGrantCounts).ForEach(func(k, v []byte) error {
			if len(v) == 8 {
				out[string(k)] = int(binary.BigEndian.Uint64(v))
			}
			return nil
		})
	})
	return out, err
}

// DisconnectGrant implements GrantStore.
func (s *boltStore) DisconnectGrant(ctx context.Context, id, subject string) (*Grant, error) {
	var found Grant
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if err := getJSON(tx.Bucket(bucketGrants), id, &found); err != nil {
			return err
		}
		if subject == "" || found.Identity.Subject != subject {
			return ErrNotFound
		}
		if err := revokeGrant(tx, id); err != nil {
			return err
		}
		return tx.Bucket(bucketConsents).Delete([]byte(consentKey(found.ClientID, subject)))
	})
	if err != nil {
		return nil, err
	}
	return &found, nil
}

// revokeClientGrants revokes every live grant of a client, found through
// its index, and returns how many.
func revokeClientGrants(tx *bolt.Tx, clientID string) (int, error) {
	prefix := ownerPrefix(clientID)
	var ids []string
	c := tx.Bucket(bucketGrantsByClient).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		ids = append(ids, grantIDOf(prefix, k))
	}
	// Revoking deletes index keys, which a live cursor must not see.
	for _, id := range ids {
		if err := revokeGrant(tx, id); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

// touchRefreshed records a rotation's time on its grant.
func touchRefreshed(tx *bolt.Tx, g *Grant, now time.Time) error {
	g.RefreshedAt = now
	return putJSON(tx.Bucket(bucketGrants), g.ID, g)
}
