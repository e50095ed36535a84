package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
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
		for i, g := range []store.Grant{
			{ID: "g1", ClientID: "app-1", Identity: store.Identity{Subject: "ada"}, CreatedAt: now},
			{ID: "g2", ClientID: "app-1", Identity: store.Identity{Subject: "bob"}, CreatedAt: now.Add(time.Second)},
			{ID: "g3", ClientID: "app-1", Identity: store.Identity{Subject: "ada"}, CreatedAt: now, Revoked: true},
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
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	page, err := s.ListGrants(ctx, store.GrantQuery{Subject: "ada", Limit: 10})
	if err != nil || len(page) != 1 || page[0].ID != "g1" {
		t.Errorf("ada's grants = %v, %v; want g1", page, err)
	}
	if counts, err := s.GrantCounts(ctx); err != nil || counts["app-1"] != (store.GrantCount{People: 2, Grants: 2}) || len(counts) != 1 {
		t.Errorf("GrantCounts = %v, %v", counts, err)
	}
	var v int
	_ = s.(*boltStore).view(context.Background(), func(tx *bolt.Tx) error {
		return json.Unmarshal(tx.Bucket(bucketMeta).Get(keySchemaVersion), &v)
	})
	if v != schemaVersion {
		t.Errorf("schema version %d after the migration, want %d", v, schemaVersion)
	}
}

// A file of schema version 2 (grant index keys not grouped, a count per
// client written with each grant) is indexed anew on first open: its
// connections are listed and counted from the new keys, a disconnect ends
// them, no key of the old layout is left behind, and the counts are gone.
func TestBoltRegroupsTheIndexesOfAVersion2File(t *testing.T) {
	path := filepath.Join(t.TempDir(), "school.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	grants := []store.Grant{
		{ID: "g1", ClientID: "app-1", Identity: store.Identity{Subject: "ada"}, CreatedAt: now},
		{ID: "g2", ClientID: "app-1", Identity: store.Identity{Subject: "ada"}, CreatedAt: now.Add(time.Minute)},
		{ID: "g3", ClientID: "app-2", Identity: store.Identity{Subject: "bob"}, CreatedAt: now},
		{ID: "g4", ClientID: "app-1", Identity: store.Identity{Subject: "bob"}, CreatedAt: now, Revoked: true},
	}
	// Version 2's key: the owner, its length in front, then time and id.
	oldKey := func(owner string, g *store.Grant) []byte {
		k := ownerPrefix(owner)
		k = binary.BigEndian.AppendUint64(k, uint64(g.CreatedAt.UnixMicro())^(1<<63))
		return append(k, g.ID...)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range version4Buckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		counts, err := tx.CreateBucket(bucketGrantCounts)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketMeta).Put(keySchemaVersion, []byte("2")); err != nil {
			return err
		}
		live := map[string]uint64{}
		for i := range grants {
			g := &grants[i]
			if err := putJSON(tx.Bucket(bucketGrants), g.ID, g); err != nil {
				return err
			}
			if g.Revoked {
				continue
			}
			live[g.ClientID]++
			if err := tx.Bucket(bucketGrantsBySubject).Put(oldKey(g.Identity.Subject, g), nil); err != nil {
				return err
			}
			if err := tx.Bucket(bucketGrantsByClient).Put(oldKey(g.ClientID, g), nil); err != nil {
				return err
			}
		}
		for id, n := range live {
			if err := counts.Put([]byte(id), binary.BigEndian.AppendUint64(nil, n)); err != nil {
				return err
			}
		}
		return putJSON(tx.Bucket(bucketConsents), consentKey("app-1", "ada"), &store.Consent{Scopes: []string{"openid"}})
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	conns, err := s.ListConnections(ctx, store.ConnectionQuery{Subject: "ada", Limit: 10})
	if err != nil || len(conns) != 1 || conns[0].ClientID != "app-1" || conns[0].Grants != 2 {
		t.Errorf("ada's connections = %v, %v; want app-1 with two grants", conns, err)
	}
	want := map[string]store.GrantCount{"app-1": {People: 1, Grants: 2}, "app-2": {People: 1, Grants: 1}}
	if counts, err := s.GrantCounts(ctx); err != nil || !maps.Equal(counts, want) {
		t.Errorf("GrantCounts = %v, %v; want %v", counts, err, want)
	}
	if n, err := s.DisconnectClient(ctx, "app-1", "ada"); err != nil || n != 2 {
		t.Errorf("DisconnectClient = %d, %v", n, err)
	}
	_ = s.(*boltStore).view(context.Background(), func(tx *bolt.Tx) error {
		if tx.Bucket(bucketGrantCounts) != nil {
			t.Error("the per-client counts are still in the file")
		}
		for _, ix := range grantIndexes {
			if n := tx.Bucket(ix.bucket).Stats().KeyN; n != 1 {
				t.Errorf("%s holds %d keys, want bob's grant of app-2 alone", ix.bucket, n)
			}
		}
		var v int
		if err := json.Unmarshal(tx.Bucket(bucketMeta).Get(keySchemaVersion), &v); err != nil || v != schemaVersion {
			t.Errorf("schema version %d after the migration, want %d", v, schemaVersion)
		}
		return nil
	})
}

// An application with 100,000 people: a page anywhere in the list, and
// the counts, read the index and never every grant.
func TestBoltGrantListOfALargeClient(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 100,000 grants")
	}
	s, err := Open(filepath.Join(t.TempDir(), "school.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 100_000
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	err = s.(*boltStore).commit(func(tx *bolt.Tx) error {
		for i := range n {
			g := &store.Grant{ID: fmt.Sprintf("g%06d", i), ClientID: "big-app", Audience: store.AudienceMember,
				Identity: store.Identity{Subject: fmt.Sprintf("p%06d", i)}, CreatedAt: start.Add(time.Duration(i) * time.Second)}
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
	mid := &store.Grant{ID: "g050000", Identity: store.Identity{Subject: "p050000"}, CreatedAt: start.Add(50_000 * time.Second)}
	began := time.Now()
	page, err := s.ListGrants(ctx, store.GrantQuery{ClientID: "big-app", After: store.CursorOf(mid), Limit: 50})
	took := time.Since(began)
	if err != nil || len(page) != 50 || page[0].ID != "g050001" || page[49].ID != "g050050" {
		t.Fatalf("a page from the middle: %d grants, %v", len(page), err)
	}
	began = time.Now()
	counts, err := s.GrantCounts(ctx)
	if err != nil || counts["big-app"] != (store.GrantCount{People: n, Grants: n}) {
		t.Fatalf("GrantCounts = %v, %v", counts, err)
	}
	tookCounts := time.Since(began)
	began = time.Now()
	conns, err := s.ListConnections(ctx, store.ConnectionQuery{ClientID: "big-app", After: "p050000", Limit: 50})
	tookPeople := time.Since(began)
	if err != nil || len(conns) != 50 || conns[0].Identity.Subject != "p050001" || conns[0].Grants != 1 {
		t.Fatalf("a page of people from the middle: %d, %v", len(conns), err)
	}
	t.Logf("a page of 50 from the middle of %d: %v; of 50 people: %v; the counts: %v", n, took, tookPeople, tookCounts)
	if took > time.Second || tookPeople > time.Second {
		t.Errorf("a page took %v, a page of people %v: it scans instead of seeking", took, tookPeople)
	}
}

// Index keys keep groups apart and in byte order whatever bytes they hold:
// a subject that is another's with a NUL and more after it, or one byte
// more, is another person, listed in its place and never disconnected
// with the first.
func TestBoltGroupKeysAreExact(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "school.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	subjects := []string{"a", "a\x00", "a\x00b", "a\x01", "ab", "aé"}
	err = s.(*boltStore).commit(func(tx *bolt.Tx) error {
		for i, sub := range subjects {
			for _, client := range []string{"c", "c\x00"} {
				g := &store.Grant{ID: fmt.Sprintf("g%d-%q", i, client), ClientID: client, Identity: store.Identity{Subject: sub},
					CreatedAt: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)}
				if err := putGrantAndTokens(tx, g, nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, client := range []string{"c", "c\x00"} {
		conns, err := s.ListConnections(ctx, store.ConnectionQuery{ClientID: client, Limit: 50})
		var got []string
		for _, c := range conns {
			got = append(got, c.Identity.Subject)
			if c.Grants != 1 || c.ClientID != client {
				t.Errorf("%q: the connection of %q = %+v", client, c.Identity.Subject, c)
			}
		}
		if err != nil || !slices.Equal(got, subjects) {
			t.Errorf("%q's people = %q, %v; want %q", client, got, err, subjects)
		}
		for i := range subjects[:len(subjects)-1] {
			page, err := s.ListConnections(ctx, store.ConnectionQuery{ClientID: client, After: subjects[i], Limit: 1})
			if err != nil || len(page) != 1 || page[0].Identity.Subject != subjects[i+1] {
				t.Errorf("%q: after %q: %v, %v", client, subjects[i], page, err)
			}
		}
	}
	if counts, err := s.GrantCounts(ctx); err != nil || counts["c"] != (store.GrantCount{People: 6, Grants: 6}) || len(counts) != 2 {
		t.Errorf("GrantCounts = %v, %v", counts, err)
	}
	if n, err := s.DisconnectClient(ctx, "c", "a"); err != nil || n != 1 {
		t.Errorf("DisconnectClient = %d, %v", n, err)
	}
	if counts, _ := s.GrantCounts(ctx); counts["c"] != (store.GrantCount{People: 5, Grants: 5}) || counts["c\x00"].People != 6 {
		t.Errorf("after the disconnect: %v", counts)
	}
}

// An index key is made in one allocation and holds what its parts do:
// the owner's prefix, the group (NULs escaped), the time and the id.
func TestIndexKeyOneAllocation(t *testing.T) {
	at := time.Date(2026, 11, 28, 13, 30, 0, 123456000, time.UTC)
	for _, c := range []struct{ owner, group, id string }{
		{"member-1", "member-app", "0006283d1e5c0c00AbCdEfGhIjKlMnOpQrStUv"},
		{"", "", ""}, {"a\x00b", "\x00\x00\x00", "g"}, {"Zoë", "app\x00", "id\x00"},
	} {
		want := binary.BigEndian.AppendUint64(groupPrefix(c.owner, c.group), uint64(at.UnixMicro())^(1<<63))
		want = append(want, c.id...)
		if got := indexKey(c.owner, c.group, at, c.id); !bytes.Equal(got, want) || len(got) > cap(got) {
			t.Errorf("indexKey(%q, %q, %q) = %x, want %x", c.owner, c.group, c.id, got, want)
		}
		if n := testing.AllocsPerRun(20, func() { indexKey(c.owner, c.group, at, c.id) }); n != 1 {
			t.Errorf("indexKey(%q, %q, %q): %v allocations, want 1", c.owner, c.group, c.id, n)
		}
	}
}
