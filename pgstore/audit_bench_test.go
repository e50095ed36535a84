package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

// BenchmarkAuditQuery measures a page (100) of one person's events, and
// of their events of the last hour, on a site holding a million events,
// half of them that person's: the indexes walk a page, whatever the site
// holds.
func BenchmarkAuditQuery(b *testing.B) {
	dsn := pgcluster.Database(b)
	ctx := context.Background()
	p, err := Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	s, err := p.Site(ctx, testIssuer, testSecret)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// As putEvents writes them, a million in one statement.
	_, err = p.db.Exec(ctx, `INSERT INTO audit (site_id, at, type, subject, client_id, data)
		SELECT $1, $2::timestamptz + k * interval '1 second', 'token_refreshed', e.sub, e.client,
			jsonb_build_object('time', $2::timestamptz + k * interval '1 second', 'type', 'token_refreshed',
				'sub', e.sub, 'client_id', e.client, 'actor', 'client', 'target', 'grant-' || (k % 20000),
				'outcome', 'issued', 'request_id', 'req', 'client_ip', '192.0.2.1')
		FROM generate_series(0, 999999) k,
			LATERAL (SELECT CASE WHEN k % 2 = 0 THEN 'ada' ELSE 'person-' || (k % 10000) END AS sub,
				'app-' || (k % 50) AS client) e`, s.id, start)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.db.Exec(ctx, `ANALYZE audit`); err != nil {
		b.Fatal(err)
	}
	end := start.Add(1_000_000 * time.Second)
	for _, bc := range []struct {
		name string
		q    store.AuditQuery
	}{
		{"subject", store.AuditQuery{Subject: "ada", Limit: 100}},
		{"subject-last-hour", store.AuditQuery{Subject: "ada", Since: end.Add(-time.Hour), Limit: 100}},
		{"client", store.AuditQuery{ClientID: "app-7", Limit: 100}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				page, err := s.QueryAudit(ctx, bc.q)
				if err != nil || len(page.Events) != 100 {
					b.Fatalf("%d events, %v", len(page.Events), err)
				}
			}
		})
	}
}
