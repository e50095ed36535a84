package authserver

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A file written before the grant indexes (schema version 1) gets them on
// first open: its live grants are listed and counted, its revoked ones not.
func TestBoltIndexesGrantsOfAnOlderFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "school.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	err = db.Update(func(tx *bolt.Tx) error {
		meta, _ := tx.CreateBucket(bucketMeta)
		grants, _ := tx.CreateBucket(bucketGrants)
		if err := meta.Put(keySchemaVersion, []byte("1")); err != nil {
			return err
		}
		for i, g := range []Grant{
			{ID: "g1", ClientID: "app-1", Identity: Identity{Subject: "ada"}, CreatedAt: now},
			{ID: "g2", ClientID: "app-1", Identity: Identity{Subject: "bob"}, CreatedAt: now.Add(time.Second)},
			{ID: "g3", ClientID: "app-1", Identity: Identity{Subject: "ada"}, CreatedAt: now, Revoked: true},
		} {
			if err := putJSON(grants, g.ID, &g); err != nil {
				return fmt.Errorf("grant %d: %w", i, err)
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenBolt(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	page, err := s.ListGrants(ctx, GrantQuery{Subject: "ada", Limit: 10})
	if err != nil || len(page) != 1 || page[0].ID != "g1" {
		t.Errorf("ada's grants = %v, %v; want g1", page, err)
	}
	if counts, err := s.GrantCounts(ctx); err != nil || counts["app-1"] != 2 || len(counts) != 1 {
		t.Errorf("GrantCounts = %v, %v", counts, err)
	}
	var v int
	_ = s.(*boltStore).db.View(func(tx *bolt.Tx) error {
		return json.Unmarshal(tx.Bucket(bucketMeta).Get(keySchemaVersion), &v)
	})
	if v != schemaVersion {
		t.Errorf("schema version %d after the migration, want %d", v, schemaVersion)
	}
}

// An application with 100,000 people: a page anywhere in the list, and
// the counts, read the index and never every grant.
func TestBoltGrantListOfALargeClient(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 100,000 grants")
	}
	s, err := OpenBolt(filepath.Join(t.TempDir(), "school.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 100_000
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	err = s.(*boltStore).db.Update(func(tx *bolt.Tx) error {
		for i := range n {
			g := &Grant{ID: fmt.Sprintf("g%06d", i), ClientID: "big-app", Audience: AudienceMember,
				Identity: Identity{Subject: fmt.Sprintf("p%06d", i)}, CreatedAt: start.Add(time.Duration(i) * time.Second)}
			if err := putGrantAndTokens(tx, g, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mid := &Grant{ID: "g050000", CreatedAt: start.Add(50_000 * time.Second)}
	began := time.Now()
	page, err := s.ListGrants(ctx, GrantQuery{ClientID: "big-app", After: CursorOf(mid), Limit: 50})
	took := time.Since(began)
	if err != nil || len(page) != 50 || page[0].ID != "g050001" || page[49].ID != "g050050" {
		t.Fatalf("a page from the middle: %d grants, %v", len(page), err)
	}
	began = time.Now()
	counts, err := s.GrantCounts(ctx)
	if err != nil || counts["big-app"] != n {
		t.Fatalf("GrantCounts = %v, %v", counts, err)
	}
	t.Logf("a page of 50 from the middle of %d: %v; the counts: %v", n, took, time.Since(began))
	if took > time.Second {
		t.Errorf("a page took %v: it scans instead of seeking", took)
	}
}
