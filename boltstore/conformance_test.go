package boltstore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/store"
	"github.com/schoolgate/schoolgate/store/storetest"
)

func TestBoltConformance(t *testing.T) {
	storetest.Run(t, openBolt)
}

// TestBoltShared: one process holds a bbolt file, so its two "instances"
// are one store; the shared suite still holds for it.
func TestBoltShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		s := openBolt(t)
		return s, s
	})
}

func openBolt(t *testing.T) store.Store {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "school.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
