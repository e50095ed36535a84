package pgstore

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

func TestMain(m *testing.M) { os.Exit(pgcluster.Main(m)) }

const (
	testIssuer = "https://school.example"
	testSecret = "secret"
)

// connect opens a pool on dsn, closed when the test ends.
func connect(t *testing.T, dsn string) *Pool {
	t.Helper()
	p, err := Connect(testContext(t), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// openSite opens the test issuer's site on its own pool.
func openSite(t *testing.T, dsn string) *Site {
	t.Helper()
	s, err := connect(t, dsn).Site(testContext(t), testIssuer, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testContext bounds the setup calls of a test.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func itoa(n int) string { return strconv.Itoa(n) }
