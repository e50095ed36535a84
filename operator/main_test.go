package operator

import (
	"os"
	"testing"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// TestMain stops the PostgreSQL cluster the store commands' tests share.
func TestMain(m *testing.M) { os.Exit(pgcluster.Main(m)) }
