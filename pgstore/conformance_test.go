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

// With a pool of one connection, a call made as a request is resumed
// (by the request whose turn came first) needs the connection the
// request's own call held: the store resumes only once it is given back.
func TestWaiterResumesWithOneConnection(t *testing.T) {
	dsn := pgcluster.Database(t) + " pool_max_conns=1"
	storetest.WaiterResumesHoldingNothing(t, openSite(t, dsn))
}
