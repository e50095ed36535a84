package pgstore

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

func TestMigrationsInSequence(t *testing.T) {
	all, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 || all[0].name != "001_init" {
		t.Fatalf("migrations = %+v, want 001_init first", all)
	}
}

// TestConcurrentConnectsMigrateOnce: instances starting together apply
// each migration once between them.
func TestConcurrentConnectsMigrateOnce(t *testing.T) {
	dsn := pgcluster.Database(t)
	const n = 4
	applied := make([][]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var p *Pool
			p, applied[i], errs[i] = open(context.Background(), dsn, 0)
			if p != nil {
				p.Close()
			}
		})
	}
	wg.Wait()
	total := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Connect %d: %v", i, errs[i])
		}
		total += len(applied[i])
	}
	all, _ := migrations()
	if total != len(all) {
		t.Errorf("%d migrations applied between %d instances, want %d: %v", total, n, len(all), applied)
	}
	if got := count(t, dsn, `SELECT count(*) FROM schoolgate_migrations`); got != len(all) {
		t.Errorf("%d rows in schoolgate_migrations, want %d", got, len(all))
	}
}

func TestMigrateIdempotent(t *testing.T) {
	dsn := pgcluster.Database(t)
	ctx := testContext(t)
	first, err := Migrate(ctx, dsn)
	if err != nil || len(first) == 0 {
		t.Fatalf("first Migrate = %v, %v; want the migrations applied", first, err)
	}
	again, err := Migrate(ctx, dsn)
	if err != nil || len(again) != 0 {
		t.Errorf("second Migrate = %v, %v; want nothing applied", again, err)
	}
}

// TestNewerSchemaRefused: a build that meets a schema from its future
// stops rather than write to tables it does not know.
func TestNewerSchemaRefused(t *testing.T) {
	dsn := pgcluster.Database(t)
	connect(t, dsn)
	exec(t, dsn, `INSERT INTO schoolgate_migrations (version) VALUES (999)`)
	all, _ := migrations()
	_, err := Connect(testContext(t), dsn)
	want := "database schema version 999 is newer than this build supports (" + itoa(len(all)) + ")"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Connect = %v, want an error saying %q", err, want)
	}
}

// exec runs statements on dsn outside the store.
func exec(t *testing.T, dsn, sql string, args ...any) {
	t.Helper()
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// count runs a query that returns one number.
func count(t *testing.T, dsn, sql string, args ...any) int {
	t.Helper()
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
