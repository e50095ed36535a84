package boltstore

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The file's layout: the buckets a request writes are at the top level;
// those written off the request path (the signing keys, the settings, the
// catalog feed, the usage counts, the connection steps) are nested under
// bucketRare.
//
// Why: bbolt keeps a bucket under a quarter of a page inline, in its
// parent's page. With all nineteen at the top level, a new file's first
// token flow (every bucket still inline, several holding a first record)
// takes the root's page past 4 KB, and bbolt splits it into a branch and
// two leaves that it never merges back (it rebalances a page only after a
// delete from it). From then on every transaction opens its buckets
// through two levels and every commit rewrites the branch and a leaf:
// about 20 allocations an exchange. Nested, the rare buckets are one entry
// of the root, and bucketRare, which holds buckets, is never inline: its
// page is written only when one of them is.
var (
	bucketRare = []byte("rare")

	// topBuckets are at the top level of the file.
	topBuckets = [][]byte{bucketMeta, bucketPending,
		bucketConsents, bucketCodes, bucketGrants, bucketTokens,
		bucketGrantsBySubject, bucketGrantsByClient, bucketAudit, bucketAuditNew,
		bucketAuditBySubject, bucketAuditByClient, bucketRare}

	// rareBuckets are under bucketRare; before schema version 5 they were
	// at the top level.
	rareBuckets = [][]byte{bucketKeys, bucketClients, bucketSettings, bucketCatalog,
		bucketUsage, bucketSteps, bucketStepsBySubject}
)

// rare is the bucket name under bucketRare.
func rare(tx *bolt.Tx, name []byte) *bolt.Bucket { return tx.Bucket(bucketRare).Bucket(name) }

// hasLayout reports whether tx's file has every bucket where this build
// looks for it.
func hasLayout(tx *bolt.Tx) bool {
	for _, b := range topBuckets {
		if tx.Bucket(b) == nil {
			return false
		}
	}
	for _, b := range rareBuckets {
		if rare(tx, b) == nil {
			return false
		}
	}
	return true
}

// writeLayout creates the buckets this build uses, moving those of an
// older file's top level under bucketRare first. It runs inside the
// transaction that writes the schema version, so a file is moved whole or
// not at all, and it is idempotent: a bucket already nested is left.
func writeLayout(tx *bolt.Tx) error {
	nest, err := tx.CreateBucketIfNotExists(bucketRare)
	if err != nil {
		return err
	}
	for _, b := range rareBuckets {
		if tx.Bucket(b) == nil {
			continue
		}
		if nest.Bucket(b) != nil {
			return fmt.Errorf("bucket %s is both at the top level and under %s", b, bucketRare)
		}
		if err := tx.MoveBucket(b, nil, nest); err != nil {
			return fmt.Errorf("moving bucket %s under %s: %w", b, bucketRare, err)
		}
	}
	for _, b := range topBuckets {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	for _, b := range rareBuckets {
		if _, err := nest.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	return nil
}

// found is the bucket name wherever a file of any schema version keeps
// it, or nil: for Export, which reads a file as it is.
func found(tx *bolt.Tx, name []byte) *bolt.Bucket {
	if nest := tx.Bucket(bucketRare); nest != nil {
		if b := nest.Bucket(name); b != nil {
			return b
		}
	}
	return tx.Bucket(name)
}

// rootOnePage reports whether the top level of tx's file is one page.
// Tx.Page reads the free list: tx is a writer's, or no writer runs.
func rootOnePage(tx *bolt.Tx) bool {
	p, err := tx.Page(int(tx.Cursor().Bucket().Root()))
	return err == nil && p != nil && p.Type == "leaf" && p.OverflowCount == 0
}

// healRoot joins the pages of a top level that was split back into one
// when they fit: the buckets of a new school that grow, each inline until
// a quarter of a page, can still take it past a page for a moment, and
// bbolt rebalances a page only after a delete from it. A bucket made and
// deleted at each end of the top level is that delete; it is done on open
// (migrate), which a split file never passes as current.
func healRoot(tx *bolt.Tx) error {
	if rootOnePage(tx) {
		return nil
	}
	for _, name := range [][]byte{{0}, {0xff}} {
		if tx.Bucket(name) != nil {
			continue
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
		if err := tx.DeleteBucket(name); err != nil {
			return err
		}
	}
	return nil
}
