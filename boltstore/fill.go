package boltstore

import (
	"errors"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

// For tests of the code above the store, which reach it only through
// store.Store and so cannot reach into its file.

var errNotBolt = errors.New("boltstore: not a bbolt store")

// Fill stores clients as PutClient does and grants as RedeemCode stores
// them (indexed, without tokens), in one transaction and with none of
// their checks: for a test that needs a site holding thousands of
// records, which one synced transaction each would take seconds to store.
func Fill(s store.Store, clients []*store.Client, grants []*store.Grant) error {
	b, ok := s.(*boltStore)
	if !ok {
		return errNotBolt
	}
	return b.commit(func(tx *bolt.Tx) error {
		for _, c := range clients {
			if err := putJSON(rare(tx, bucketClients), c.ID, c); err != nil {
				return err
			}
		}
		for _, g := range grants {
			if err := putGrantAndTokens(tx, g, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// NoSync makes s commit without syncing its file, for fuzzing, where
// nothing needs to survive the process and every input writes.
func NoSync(s store.Store) error {
	b, ok := s.(*boltStore)
	if !ok {
		return errNotBolt
	}
	b.first.Lock()
	defer b.first.Unlock()
	if p := b.placing.Load(); p != nil {
		_ = p.wait() // its placing sets the switch too
	}
	b.db.NoSync, b.noSync = true, true
	return nil
}

// Commits returns how many read-write transactions have been committed
// to s's file since it was created: each is two syncs of the file (the
// first, of a file made aside, two syncs of it and its directory). A read
// transaction's id is that of the last commit, and a new file starts at 1.
func Commits(s store.Store) (int, error) {
	b, ok := s.(*boltStore)
	if !ok {
		return 0, errNotBolt
	}
	tx, err := b.db.Begin(false)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	return tx.ID() - 1, nil
}

// RootOnePage reports whether the file's top level is one page, as its
// layout keeps it (boltlayout.go).
func RootOnePage(s store.Store) (bool, error) {
	b, ok := s.(*boltStore)
	if !ok {
		return false, errNotBolt
	}
	// Tx.Page reads the free list, which only a writer may do while
	// others write; this one is rolled back.
	tx, err := b.db.Begin(true)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback() }()
	return rootOnePage(tx), nil
}
