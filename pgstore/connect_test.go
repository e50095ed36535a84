package pgstore

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestConnectUnreachable: a database that never comes up fails Connect
// after the window, naming the server and not the password.
func TestConnectUnreachable(t *testing.T) {
	defer func(w time.Duration) { connectWindow = w }(connectWindow)
	connectWindow = 300 * time.Millisecond
	dir := filepath.Join(t.TempDir(), "nothing-here")
	start := time.Now()
	_, err := Connect(testContext(t), "host="+dir+" user=u password=hunter2 dbname=d sslmode=disable")
	elapsed := time.Since(start)
	if err == nil {
		t.Fatal("Connect to no server succeeded")
	}
	if elapsed < connectWindow/2 || elapsed > connectWindow+3*time.Second {
		t.Errorf("Connect failed after %v, want about %v", elapsed, connectWindow)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the socket directory", err)
	}
	var ce *pgconn.ConnectError
	if strings.Contains(err.Error(), "hunter2") || errors.As(err, &ce) {
		t.Errorf("error %q carries the password or the connection configuration", err)
	}
}

func TestParseDSN(t *testing.T) {
	for _, c := range []struct {
		dsn  string
		max  int32
		fail bool
	}{
		{dsn: "host=db user=u password=hunter2 dbname=d", max: defaultMaxConns},
		{dsn: "postgres://u:hunter2@db/d?pool_max_conns=3", max: 3},
		{dsn: "host=db pool_max_conns=40", max: 40},
		{dsn: "postgres://u:hunter2@db:notaport/d", fail: true},
		{dsn: "host=db password=hunter2 port=nope", fail: true},
		{dsn: "host=db password='hunter2 pool_max_conns=0", fail: true},
		{dsn: "postgres://u:hunter2@db/d?pool_max_conns=0", fail: true},
	} {
		cfg, err := ParseDSN(c.dsn)
		switch {
		case c.fail && err == nil:
			t.Errorf("ParseDSN(%q) succeeded", c.dsn)
		case c.fail && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("ParseDSN(%q) = %q, which shows the password", c.dsn, err)
		case !c.fail && err != nil:
			t.Errorf("ParseDSN(%q): %v", c.dsn, err)
		case !c.fail && cfg.MaxConns != c.max:
			t.Errorf("ParseDSN(%q).MaxConns = %d, want %d", c.dsn, cfg.MaxConns, c.max)
		}
	}
}
