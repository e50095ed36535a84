package pgcluster

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func query(t *testing.T, dsn string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	defer conn.Close(ctx)
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestCluster(t *testing.T) {
	skipWithoutServer(t)
	for _, durable := range []bool{false, true} {
		name := "fsync off"
		if durable {
			name = "durable"
		}
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			c, err := Start(Options{Durable: durable})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("initdb to first connection: %v", time.Since(start).Round(time.Millisecond))
			dir := c.dir
			defer func() {
				if err := c.Stop(); err != nil {
					t.Error(err)
				}
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("Stop left %s behind (%v)", dir, err)
				}
			}()

			var fsync string
			conn, err := pgx.Connect(context.Background(), c.DSN("postgres"))
			if err != nil {
				t.Fatal(err)
			}
			if err := conn.QueryRow(context.Background(), "SHOW fsync").Scan(&fsync); err != nil {
				t.Fatal(err)
			}
			conn.Close(context.Background())
			if want := map[bool]string{false: "off", true: "on"}[durable]; fsync != want {
				t.Errorf("fsync = %s, want %s", fsync, want)
			}

			ctx := context.Background()
			for _, db := range []string{"one", "two"} {
				dsn, err := c.CreateDatabase(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				if got := query(t, dsn); got != db {
					t.Errorf("connected to %s, want %s", got, db)
				}
			}
			if _, err := c.CreateDatabase(ctx, "one"); err == nil {
				t.Error("CreateDatabase of an existing database succeeded")
			}

			if err := c.Pause(); err != nil {
				t.Fatal(err)
			}
			short, cancel := context.WithTimeout(ctx, 2*time.Second)
			if conn, err := pgx.Connect(short, c.DSN("one")); err == nil {
				conn.Close(ctx)
				t.Error("connected to a paused cluster")
			}
			cancel()
			resumed := time.Now()
			if err := c.Resume(); err != nil {
				t.Fatal(err)
			}
			t.Logf("Resume to first connection: %v", time.Since(resumed).Round(time.Millisecond))
			if got := query(t, c.DSN("two")); got != "two" {
				t.Errorf("after Resume, connected to %s, want two", got)
			}
		})
	}
}

// A session open when the cluster pauses fails, and a new one works after
// Resume: what a "database went away mid-load" test relies on.
func TestPauseEndsSessions(t *testing.T) {
	skipWithoutServer(t)
	c, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Ping(ctx); err == nil {
		t.Error("a session survived Pause")
	}
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	query(t, c.DSN("postgres"))
}

func TestDatabase(t *testing.T) {
	a := Database(t)
	start := time.Now()
	b := Database(t)
	t.Logf("Database on the running cluster: %v", time.Since(start).Round(time.Microsecond))
	if a == b {
		t.Fatalf("two calls returned the same database: %s", a)
	}
	for _, dsn := range []string{a, b} {
		want := dsn[strings.Index(dsn, "dbname=")+len("dbname="):]
		want = want[:strings.IndexByte(want, ' ')]
		if got := query(t, dsn); got != want {
			t.Errorf("connected to %s, want %s", got, want)
		}
	}
	if Shared(t) != Shared(t) {
		t.Error("Shared returned two clusters")
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/pgcluster-1/s": "/tmp/pgcluster-1/s",
		"":                   "''",
		"/tmp/a b":           "'/tmp/a b'",
		`it's\`:              `'it\'s\\'`,
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestBinDirHonoursPGBINDIR(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("PG_BINDIR", empty)
	if dir, err := BinDir(); err == nil || !strings.Contains(err.Error(), "PG_BINDIR="+empty) {
		t.Errorf("BinDir with an empty PG_BINDIR = %q, %v; want an error naming it", dir, err)
	}
}

func TestVersionOrder(t *testing.T) {
	dirs := []string{"/usr/lib/postgresql/9.6/bin", "/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/10/bin"}
	newest := dirs[0]
	for _, d := range dirs[1:] {
		if versionLess(newest, d) {
			newest = d
		}
	}
	if newest != "/usr/lib/postgresql/15/bin" {
		t.Errorf("newest = %s", newest)
	}
}
