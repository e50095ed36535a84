package pgstore

import (
	"context"
	"hash/fnv"
	"strconv"
)

// lock takes a transaction-scoped advisory lock on one decision of the
// site (its first key, the clients of a kind), for decisions no unique
// index can make: whoever holds it reads and writes knowing no other
// instance does the same. The lock is released on commit or rollback.
func (s *Site) lock(ctx context.Context, q querier, scope ...string) error {
	_, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(s.id, scope...))
	return err
}

// lockKey maps a site and scope to the 64-bit key of an advisory lock.
// Two scopes colliding would only make them wait on each other.
func lockKey(siteID int64, scope ...string) int64 {
	h := fnv.New64a()
	h.Write([]byte("schoolgate\x00" + strconv.FormatInt(siteID, 10)))
	for _, s := range scope {
		h.Write([]byte("\x00" + s))
	}
	return int64(h.Sum64())
}
