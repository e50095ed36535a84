package pgstore

import (
	"testing"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/authserver/storetest"
	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// TestConformance: a fresh database per subtest.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) authserver.Store {
		return openSite(t, pgcluster.Database(t))
	})
}

// TestShared: two instances of one site, each with a pool of its own, as
// two gateways would hold them.
func TestShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (authserver.Store, authserver.Store) {
		dsn := pgcluster.Database(t)
		return openSite(t, dsn), openSite(t, dsn)
	})
}
