package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// One cluster per test binary: initdb and a server start cost about half
// a second, a database on a running server tens of milliseconds.
var (
	mainRunning atomic.Bool
	sharedOnce  sync.Once
	shared      *Cluster
	sharedErr   error
	databases   atomic.Int64
)

// Main runs the tests of a package that uses Database or Shared, then
// stops the shared cluster, if one was started, and removes its directory.
// Such a package must have
//
//	func TestMain(m *testing.M) { os.Exit(pgcluster.Main(m)) }
//
// since nothing else runs after the last test; Database and Shared fail a
// test that runs without it.
func Main(m *testing.M) int {
	mainRunning.Store(true)
	code := m.Run()
	mainRunning.Store(false)
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Shared returns the test binary's shared cluster, starting it (fsync off)
// on first use, for tests that need the cluster itself, to Pause it say. A
// test that pauses it must Resume it before it ends: tests of the same
// package share it.
//
// In the fast loop (go test -short) it skips the test. Without a
// PostgreSQL server to run, it skips the test, unless the CI environment
// variable is set: CI must test the PostgreSQL store, so there it fails
// instead. A PG_BINDIR without one fails the test anywhere.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	if !mainRunning.Load() {
		t.Fatal("pgcluster: the package's TestMain must call pgcluster.Main, which stops the shared cluster after the tests: func TestMain(m *testing.M) { os.Exit(pgcluster.Main(m)) }")
	}
	skipWithoutServer(t)
	sharedOnce.Do(func() {
		start := time.Now()
		shared, sharedErr = Start(Options{})
		if sharedErr == nil {
			t.Logf("pgcluster: shared cluster started in %v", time.Since(start).Round(time.Millisecond))
		}
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// skipWithoutServer skips the test in the fast loop (go test -short),
// which runs no database server, and when there is no PostgreSQL to run,
// outside CI. A PG_BINDIR that names no server is a mistake to fix, so it
// fails everywhere.
func skipWithoutServer(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("pgcluster: needs a PostgreSQL server; run without -short")
	}
	_, err := BinDir()
	switch {
	case err == nil:
	case errors.Is(err, errNoServer) && os.Getenv("CI") == "":
		t.Skip(err)
	case errors.Is(err, errNoServer):
		t.Fatalf("%v (CI is set, so this fails rather than skips)", err)
	default:
		t.Fatal(err)
	}
}

// Database returns the DSN of a new, empty database on the shared cluster
// (see Shared), its name unique in the test binary. It is not dropped: the
// whole cluster goes when the tests end.
func Database(t testing.TB) string {
	t.Helper()
	c := Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, err := c.CreateDatabase(ctx, fmt.Sprintf("t%d", databases.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}
