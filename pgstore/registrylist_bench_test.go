package pgstore

import (
	"context"
	"testing"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// BenchmarkRegistryList100k measures listing a registry of 100,000
// schools, as a platform's start does: one query, every row decoded into
// a record. The rows are written by one statement (the registry's Put
// would take minutes), with the bench's configuration's size.
func BenchmarkRegistryList100k(b *testing.B) {
	const n = 100_000
	dsn := pgcluster.Database(b)
	p, err := Connect(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	r, err := OpenRegistry(context.Background(), p, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if _, err := p.db.Exec(context.Background(), `INSERT INTO schools (issuer, config, version, updated_at)
		SELECT 'http://s' || i || '.localhost:8080',
			('{"rate_limits":{"off":true},"upstream":"http://127.0.0.1:40000","vendors":[{"audience":"member","client_id":"bench-agent","name":"Bench Agent","redirect_uris":["http://127.0.0.1:1/callback"],"scopes":["openid","profile","courses.read"]}]}')::json,
			1, now()
		FROM generate_series(0, $1 - 1) AS i`, n); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		list, err := r.List(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if len(list) != n {
			b.Fatalf("%d records, want %d", len(list), n)
		}
	}
}
