package pgstore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

// An application with 100,000 people and a person with 500 grants: each
// list is read a page at a time from its index, never by reading every
// grant of the site (a person's grants, few, are sorted by application as
// they are read), and the counts come from the live grants alone.
func TestGrantListsUseTheirIndexes(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 100,500 grants")
	}
	dsn := pgcluster.Database(t)
	s := openSite(t, dsn)
	ctx := testContext(t)
	db := s.pool.db
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Grants as queueGrant writes them, made by the database itself.
	_, err := db.Exec(ctx, `INSERT INTO grants (site_id, id, client_id, created_at, data)
		SELECT $1, 'g' || lpad(i::text, 6, '0'), 'big-app', $2::timestamptz + i * interval '1 second',
			jsonb_build_object('id', 'g' || lpad(i::text, 6, '0'), 'client_id', 'big-app', 'audience', 'member',
				'identity', jsonb_build_object('sub', 'p' || i), 'created_at', $2::timestamptz + i * interval '1 second')
		FROM generate_series(0, 99999) AS i`, s.id, start)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(ctx, `INSERT INTO grants (site_id, id, client_id, created_at, data)
		SELECT $1, 'm' || lpad(i::text, 3, '0'), 'app-' || i, $2::timestamptz + i * interval '1 second',
			jsonb_build_object('id', 'm' || lpad(i::text, 3, '0'), 'client_id', 'app-' || i, 'audience', 'member',
				'identity', jsonb_build_object('sub', 'many'), 'created_at', $2::timestamptz + i * interval '1 second')
		FROM generate_series(0, 499) AS i`, s.id, start)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `ANALYZE grants`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, sql, index string
		args             []any
		sorted           bool // read in the index's order, no sort
	}{
		{"by client", listByClient, "grants_live_by_client_subject",
			[]any{s.id, "big-app", "p50", start.Add(50 * time.Second), "g000050", 50}, true},
		{"by subject", listBySubject, "grants_live_by_subject",
			[]any{s.id, "many", "app-50", start.Add(50 * time.Second), "m050", 50}, false},
		{"a client's people", connectionQueries[[2]bool{false, false}], "grants_live_by_client_subject",
			[]any{s.id, "big-app", "p50", 50}, false},
		{"a person's applications", connectionQueries[[2]bool{true, true}], "grants_live_by_subject",
			[]any{s.id, "many", "", 50}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var plan []map[string]any
			err := db.QueryRow(ctx, `EXPLAIN (FORMAT JSON) `+c.sql, c.args...).Scan(&plan)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(plan)
			if !strings.Contains(string(raw), c.index) || strings.Contains(string(raw), "Seq Scan") ||
				(c.sorted && strings.Contains(string(raw), `"Sort"`)) {
				t.Errorf("the plan does not read a page of %s:\n%s", c.index, raw)
			}
		})
	}
	mid := &store.Grant{ID: "g050000", Identity: store.Identity{Subject: "p50000"}, CreatedAt: start.Add(50_000 * time.Second)}
	began := time.Now()
	page, err := s.ListGrants(ctx, store.GrantQuery{ClientID: "big-app", After: store.CursorOf(mid), Limit: 50})
	took := time.Since(began)
	if err != nil || len(page) != 50 || page[0].ID != "g050001" || page[0].Identity.Subject != "p50001" {
		t.Fatalf("a page from the middle: %d grants, %v", len(page), err)
	}
	began = time.Now()
	counts, err := s.GrantCounts(context.Background())
	one := store.GrantCount{People: 1, Grants: 1}
	if err != nil || counts["big-app"] != (store.GrantCount{People: 100_000, Grants: 100_000}) || counts["app-7"] != one {
		t.Fatalf("GrantCounts: %d clients, big-app %+v, %v", len(counts), counts["big-app"], err)
	}
	t.Logf("a page of 50 from the middle of 100,000: %v; the counts of 501 clients: %v", took, time.Since(began))
	began = time.Now()
	conns, err := s.ListConnections(ctx, store.ConnectionQuery{ClientID: "big-app", After: "p50000", Limit: 50})
	if err != nil || len(conns) != 50 || conns[0].Identity.Subject != "p50001" {
		t.Fatalf("a page of people from the middle: %d, %v", len(conns), err)
	}
	t.Logf("a page of 50 people from the middle of 100,000: %v", time.Since(began))
}
