package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

// auditBenchEvents is how many events the audit benchmarks' site holds:
// half of one person's, the rest spread over ten thousand others.
const auditBenchEvents = 1_000_000

// BenchmarkAuditQuery measures a page (100) of one person's events, and
// of their events of the last hour, on a site holding a million events,
// half of them that person's: the index walks a page, whatever the site
// holds.
func BenchmarkAuditQuery(b *testing.B) {
	st, err := Open(filepath.Join(b.TempDir(), "audit.db"), time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	s := st.(*boltStore)
	s.db.NoSync = true
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const batch = 50_000
	for n := 0; n < auditBenchEvents; n += batch {
		evs := make([]store.AuditEvent, batch)
		for i := range evs {
			k := n + i
			sub := "ada"
			if k%2 == 1 {
				sub = fmt.Sprintf("person-%d", k%10_000)
			}
			evs[i] = store.AuditEvent{Time: start.Add(time.Duration(k) * time.Second), Type: store.EventTokenRefreshed,
				Subject: sub, ClientID: fmt.Sprintf("app-%d", k%50), Actor: store.ActorClient,
				Target: fmt.Sprintf("grant-%d", k%20_000), Outcome: "issued", RequestID: "req", ClientIP: "192.0.2.1"}
		}
		if err := s.db.Update(func(tx *bolt.Tx) error { return putEvents(tx, evs) }); err != nil {
			b.Fatal(err)
		}
	}
	// The indexes catch up once, as the janitor's pass or the first query
	// would, and the queries read them.
	took := time.Now()
	if err := s.indexAudit(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Logf("indexing %d events took %v", auditBenchEvents, time.Since(took))
	end := start.Add(auditBenchEvents * time.Second)
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
				page, err := s.QueryAudit(context.Background(), bc.q)
				if err != nil || len(page.Events) != 100 {
					b.Fatalf("%d events, %v", len(page.Events), err)
				}
			}
		})
	}
}
