package pgstore

import (
	"testing"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
	"github.com/schoolgate/schoolgate/store/storetest"
)

// TestConformance: a fresh database per subtest.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openSite(t, pgcluster.Database(t))
	})
}

// TestShared: two instances of one site, each with a pool of its own, as
// two gateways would hold them.
func TestShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		dsn := pgcluster.Database(t)
		return openSite(t, dsn), openSite(t, dsn)
	})
}
