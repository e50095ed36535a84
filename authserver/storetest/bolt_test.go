package storetest_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/authserver/storetest"
)

func TestBoltConformance(t *testing.T) {
	storetest.Run(t, openBolt)
}

// TestBoltShared: one process holds a bbolt file, so its two "instances"
// are one store; the shared suite still holds for it.
func TestBoltShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (authserver.Store, authserver.Store) {
		s := openBolt(t)
		return s, s
	})
}

func openBolt(t *testing.T) authserver.Store {
	s, err := authserver.OpenBolt(filepath.Join(t.TempDir(), "school.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
