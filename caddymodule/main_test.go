package caddymodule

import (
	"os"
	"testing"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// TestMain stops the PostgreSQL server that the store tests start.
func TestMain(m *testing.M) { os.Exit(pgcluster.Main(m)) }
