package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

// The grant indexes of the bbolt store. Each live grant has one key in
// bucketGrantsBySubject and one in bucketGrantsByClient, written and
// deleted in the transaction that stores, revokes or purges the grant;
// nothing else is written for it. A key is
//
//	owner  the subject (or client id), its length in front, so that no
//	       owner's keys are a prefix of another's
//	group  the client id (or subject), NUL escaped as 00 FF and ended by
//	       00 00, so that byte order of keys is byte order of groups and
//	       no group is a prefix of another
//	time   the grant's creation, microseconds, sign bit flipped
//	id     the grant's id
//
// so a prefix scan is one owner's grants, group by group, and a longer
// prefix is one person's whole connection to one client. The people
// connected to a client are counted from its keys at read time, which is
// why no per-client count is written with each grant.
var (
	bucketGrantsBySubject = []byte("grants_by_subject")
	bucketGrantsByClient  = []byte("grants_by_client")
	// bucketGrantCounts held a count per client up to schema version 2;
	// the migration to version 3 deletes it.
	bucketGrantCounts = []byte("grant_counts")
)

// errBadIndexKey is an index key this build did not write.
var errBadIndexKey = errors.New("grant index key malformed")

// grantIndex is one of the two indexes: whose grants it lists (owner) and
// what it groups them by.
type grantIndex struct {
	bucket       []byte
	owner, group func(*store.Grant) string
	// cursorGroup is the group of a list position.
	cursorGroup func(store.GrantCursor) string
}

var (
	bySubject = grantIndex{bucketGrantsBySubject,
		func(g *store.Grant) string { return g.Identity.Subject }, func(g *store.Grant) string { return g.ClientID },
		func(c store.GrantCursor) string { return c.ClientID }}
	byClient = grantIndex{bucketGrantsByClient,
		func(g *store.Grant) string { return g.ClientID }, func(g *store.Grant) string { return g.Identity.Subject },
		func(c store.GrantCursor) string { return c.Subject }}
	grantIndexes = []grantIndex{bySubject, byClient}
)

// indexOf is the index a list reads and its owner: the person's when
// subject is set, else the client's.
func indexOf(subject, clientID string) (grantIndex, string) {
	if subject != "" {
		return bySubject, subject
	}
	return byClient, clientID
}

// key is g's key in the index.
func (ix grantIndex) key(g *store.Grant) []byte {
	return indexKey(ix.owner(g), ix.group(g), g.CreatedAt, g.ID)
}

// ownerPrefix is the start of every index key of one owner.
func ownerPrefix(owner string) []byte { return appendOwner(make([]byte, 0, 4+len(owner)), owner) }

// appendOwner appends an owner as index keys hold it.
func appendOwner(k []byte, owner string) []byte {
	k = binary.BigEndian.AppendUint32(k, uint32(len(owner)))
	return append(k, owner...)
}

// appendGroup appends a group as index keys hold it.
func appendGroup(k []byte, group string) []byte {
	for i := range len(group) {
		k = append(k, group[i])
		if group[i] == 0 {
			k = append(k, 0xFF)
		}
	}
	return append(k, 0, 0)
}

// groupPrefix is the start of every index key of one owner's group.
func groupPrefix(owner, group string) []byte { return appendGroup(ownerPrefix(owner), group) }

// afterGroup is where the group that prefix (a groupPrefix) starts ends:
// its last byte, the terminator's 00, raised to 01, which no key holds.
func afterGroup(prefix []byte) []byte {
	out := bytes.Clone(prefix)
	out[len(out)-1] = 1
	return out
}

// indexKey is the key of a grant position under an owner and group. Times
// are kept to the microsecond, as PostgreSQL keeps them, so both stores
// order grants alike; the sign bit is flipped so that byte order is time
// order. It is made in one allocation (each exchange writes two), sized
// for a group whose every byte is an escaped NUL.
func indexKey(owner, group string, created time.Time, id string) []byte {
	k := make([]byte, 0, 4+len(owner)+2*len(group)+2+8+len(id))
	k = appendGroup(appendOwner(k, owner), group)
	k = binary.BigEndian.AppendUint64(k, uint64(created.UnixMicro())^(1<<63))
	return append(k, id...)
}

// groupEnd is the length of key's prefix up to the end of its group, the
// owner's prefix being from bytes long.
func groupEnd(key []byte, from int) (int, error) {
	for i := from; i+1 < len(key); i++ {
		if key[i] != 0 {
			continue
		}
		if key[i+1] == 0 {
			if i+2+8 > len(key) {
				break
			}
			return i + 2, nil
		}
		i++ // an escaped NUL
	}
	return 0, errBadIndexKey
}

// grantIDAt is the grant id of an index key whose group ends at end.
func grantIDAt(key []byte, end int) string { return string(key[end+8:]) }

// indexGrant adds a live grant to the indexes.
func indexGrant(tx *bolt.Tx, g *store.Grant) error {
	for _, ix := range grantIndexes {
		if err := tx.Bucket(ix.bucket).Put(ix.key(g), nil); err != nil {
			return err
		}
	}
	return nil
}

// unindexGrant removes a grant that stops being live from the indexes.
func unindexGrant(tx *bolt.Tx, g *store.Grant) error {
	for _, ix := range grantIndexes {
		if err := tx.Bucket(ix.bucket).Delete(ix.key(g)); err != nil {
			return err
		}
	}
	return nil
}

// rebuildGrantIndexes indexes every live grant anew: a file written by a
// build with other indexes, or none, gets this build's on first open, and
// the per-client counts of schema version 2 are deleted.
func rebuildGrantIndexes(tx *bolt.Tx) error {
	if err := tx.DeleteBucket(bucketGrantCounts); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
		return err
	}
	for _, ix := range grantIndexes {
		if err := tx.DeleteBucket(ix.bucket); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
			return err
		}
		if _, err := tx.CreateBucket(ix.bucket); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketGrants).ForEach(func(_, v []byte) error {
		var g store.Grant
		if err := decodeGrant(v, &g); err != nil {
			return err
		}
		if g.Revoked {
			return nil
		}
		return indexGrant(tx, &g)
	})
}

// ListGrants implements store.GrantStore with a prefix scan of one index.
func (s *boltStore) ListGrants(ctx context.Context, q store.GrantQuery) ([]*store.Grant, error) {
	ix, owner := indexOf(q.Subject, q.ClientID)
	if owner == "" {
		return nil, nil
	}
	limit := store.PageLimit(q.Limit)
	var out []*store.Grant
	err := s.view(ctx, func(tx *bolt.Tx) error {
		out = nil
		prefix := ownerPrefix(owner)
		grants := tx.Bucket(bucketGrants)
		c := tx.Bucket(ix.bucket).Cursor()
		start := prefix
		if !q.After.IsZero() {
			start = indexKey(owner, ix.cursorGroup(q.After), q.After.CreatedAt, q.After.ID)
		}
		for k, _ := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Next() {
			if !q.After.IsZero() && bytes.Equal(k, start) {
				continue
			}
			end, err := groupEnd(k, len(prefix))
			if err != nil {
				return err
			}
			var g store.Grant
			if err := getGrant(grants, grantIDAt(k, end), &g); err != nil {
				return err
			}
			out = append(out, &g)
		}
		return nil
	})
	return out, err
}

// ListConnections implements store.GrantStore: the same prefix scan, a new
// connection at each new group, and every grant of a group read.
func (s *boltStore) ListConnections(ctx context.Context, q store.ConnectionQuery) ([]*store.Connection, error) {
	ix, owner := indexOf(q.Subject, q.ClientID)
	if owner == "" {
		return nil, nil
	}
	limit := store.PageLimit(q.Limit)
	var out []*store.Connection
	err := s.view(ctx, func(tx *bolt.Tx) error {
		out = nil
		prefix := ownerPrefix(owner)
		start := prefix
		if q.After != "" {
			start = afterGroup(groupPrefix(owner, q.After))
		}
		grants := tx.Bucket(bucketGrants)
		c := tx.Bucket(ix.bucket).Cursor()
		var group []byte
		var conn *store.Connection
		for k, _ := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			end, err := groupEnd(k, len(prefix))
			if err != nil {
				return err
			}
			if conn == nil || !bytes.Equal(k[:end], group) {
				if len(out) == limit {
					break
				}
				conn = &store.Connection{}
				out = append(out, conn)
				group = append(group[:0], k[:end]...)
			}
			var g store.Grant
			if err := getGrant(grants, grantIDAt(k, end), &g); err != nil {
				return err
			}
			conn.Add(&g)
		}
		return nil
	})
	return out, err
}

// GrantCounts implements store.GrantStore: one pass over the client index's
// keys, which are grouped by person, reading no grant.
func (s *boltStore) GrantCounts(ctx context.Context) (map[string]store.GrantCount, error) {
	out := map[string]store.GrantCount{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		clear(out)
		var owner, group []byte
		var n store.GrantCount
		flush := func() {
			if n.Grants > 0 {
				out[string(owner)] = n
			}
		}
		c := tx.Bucket(bucketGrantsByClient).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) < 4 || 4+int(binary.BigEndian.Uint32(k)) > len(k) {
				return errBadIndexKey
			}
			from := 4 + int(binary.BigEndian.Uint32(k))
			end, err := groupEnd(k, from)
			if err != nil {
				return err
			}
			if !bytes.Equal(k[4:from], owner) {
				flush()
				owner, group, n = append(owner[:0], k[4:from]...), group[:0], store.GrantCount{}
			}
			if !bytes.Equal(k[:end], group) {
				n.People++
				group = append(group[:0], k[:end]...)
			}
			n.Grants++
		}
		flush()
		return nil
	})
	return out, err
}

// DisconnectGrant implements store.GrantStore.
func (s *boltStore) DisconnectGrant(ctx context.Context, id, subject string) (*store.Grant, error) {
	var found store.Grant
	err := s.updateAudit(ctx, func(tx *bolt.Tx, at *store.AuditTx) error {
		if err := getGrant(tx.Bucket(bucketGrants), id, &found); err != nil {
			return err
		}
		if subject == "" || found.Identity.Subject != subject {
			return store.ErrNotFound
		}
		at.OfClient(found.ClientID)
		if !found.Revoked {
			at.Ended(1)
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

// DisconnectClient implements store.GrantStore: the pair's grants are one
// prefix of the client index. bbolt has one writer at a time, so a
// rotation either committed before or finds the grant revoked.
func (s *boltStore) DisconnectClient(ctx context.Context, clientID, subject string) (int, error) {
	if clientID == "" || subject == "" {
		return 0, store.ErrNotFound
	}
	n := 0
	err := s.updateAudit(ctx, func(tx *bolt.Tx, at *store.AuditTx) error {
		prefix := groupPrefix(clientID, subject)
		var ids []string
		c := tx.Bucket(bucketGrantsByClient).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			ids = append(ids, grantIDAt(k, len(prefix)))
		}
		consents := tx.Bucket(bucketConsents)
		key := []byte(consentKey(clientID, subject))
		remembered := consents.Get(key) != nil
		if len(ids) == 0 && !remembered {
			return store.ErrNotFound
		}
		// Revoking deletes index keys, which a live cursor must not see.
		for _, id := range ids {
			if err := revokeGrant(tx, id); err != nil {
				return fmt.Errorf("revoking grant %s: %w", id, err)
			}
		}
		n = len(ids)
		at.Ended(n)
		return consents.Delete(key)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// revokeClientGrants revokes every live grant of a client, found through
// its index, and returns how many.
func revokeClientGrants(tx *bolt.Tx, clientID string) (int, error) {
	prefix := ownerPrefix(clientID)
	var ids []string
	c := tx.Bucket(bucketGrantsByClient).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		end, err := groupEnd(k, len(prefix))
		if err != nil {
			return 0, err
		}
		ids = append(ids, grantIDAt(k, end))
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
func touchRefreshed(tx *bolt.Tx, g *store.Grant, now time.Time) error {
	g.RefreshedAt = now
	return putGrant(tx.Bucket(bucketGrants), g.ID, g)
}
