package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/pgstore"
	"github.com/schoolgate/schoolgate/registry"
)

// BenchmarkPlatformStart100k measures a platform's start on a registry
// dir of 100,000 schools with its snapshot: the registry opened (the
// snapshot read), listed, every record an idle school in the host table.
// What the process spends beyond it is Caddy's own start and the first
// school's build. It reports the live heap the platform holds for each
// idle school, the registry's part and the platform's together. Run
// with -benchtime 1x or a few.
func BenchmarkPlatformStart100k(b *testing.B) {
	const n = 100_000
	root := b.TempDir()
	dir := filepath.Join(root, "registry")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	for i := range n {
		rec := registry.Record{Issuer: fmt.Sprintf("https://s%d.example", i), Version: 1, UpdatedAt: now,
			Config: json.RawMessage(`{"upstream":"http://127.0.0.1:9","rate_limits":{"off":true}}`)}
		data, _ := json.MarshalIndent(rec, "", "\t")
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%d.example.json", i)), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	d, err := registry.OpenDirSnapshot(dir, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	d.Close() // writes the snapshot
	for b.Loop() {
		before := heapNow()
		tp := newTestPlatform(b, 1000, func(tp *testPlatform) {
			tp.open = func(c context.Context) (*openedRegistry, error) {
				return PlatformRegistry{Dir: dir}.open(c, tp.ctx)
			}
		})
		if got := tp.tables.Load().Len(); got != n {
			b.Fatalf("%d schools in the table, want %d", got, n)
		}
		b.StopTimer()
		// The registry's comparison of the files with the snapshot
		// ends within a few seconds; its garbage is not the schools'.
		time.Sleep(5 * time.Second)
		b.ReportMetric(float64(heapNow()-before)/n, "B/idle-school")
		if path := os.Getenv("SCHOOLGATE_HEAP_PROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
		tp.end(b)
		b.StartTimer()
	}
}

// BenchmarkPlatformFirstBuild measures the first request (discovery) of
// a school registered and never built, whose data directory does not
// exist yet: its bbolt file created, its keys made and stored, as for
// each school of a burst added at once.
func BenchmarkPlatformFirstBuild(b *testing.B) {
	tp := platformOf(b, b.N, "")
	took := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		tp.do(b, fmt.Sprintf("https://s%d.example%s", i, discoveryPath))
		took[i] = time.Since(start)
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[(len(took)*99)/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkPlatformStartPostgres100k is BenchmarkPlatformStart100k on a
// registry postgres of 100,000 schools (the rows written by one
// statement, the bench's configuration's size): the pool connected, the
// registry opened and listed, the table built.
func BenchmarkPlatformStartPostgres100k(b *testing.B) {
	const n = 100_000
	dsn := pgcluster.Database(b)
	reg := PlatformRegistry{Postgres: &PostgresStore{DSN: dsn, KeySecret: "bench-key-secret"}}
	fill := func(c context.Context) error {
		pool, err := pgstore.Connect(c, dsn)
		if err != nil {
			return err
		}
		defer pool.Close()
		r, err := pgstore.OpenRegistry(c, pool, nil)
		if err != nil {
			return err
		}
		defer r.Close()
		// One Put makes the schema's rows right; the rest by SQL.
		if _, err := r.Put(c, registry.Record{Issuer: "http://s0.localhost:8080", Config: json.RawMessage(`{"upstream":"http://127.0.0.1:9"}`)}); err != nil {
			return err
		}
		conn, err := pgx.Connect(c, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(c)
		_, err = conn.Exec(c, `INSERT INTO schools (issuer, config, version, updated_at)
			SELECT 'http://s' || i || '.localhost:8080',
				'{"rate_limits":{"off":true},"upstream":"http://127.0.0.1:40000","vendors":[{"audience":"member","client_id":"bench-agent","name":"Bench Agent","redirect_uris":["http://127.0.0.1:1/callback"],"scopes":["openid","profile","courses.read"]}]}'::json,
				1, now()
			FROM generate_series(1, 99999) AS i`)
		return err
	}
	if err := fill(context.Background()); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		tp := newTestPlatform(b, 1000, func(tp *testPlatform) {
			tp.open = func(c context.Context) (*openedRegistry, error) { return reg.open(c, tp.ctx) }
		})
		if got := tp.tables.Load().Len(); got != n {
			b.Fatalf("%d schools in the table, want %d", got, n)
		}
		b.StopTimer()
		tp.end(b)
		b.StartTimer()
	}
}
