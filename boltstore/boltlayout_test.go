package boltstore

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

// version4Buckets is the layout of schema versions up to 4: every bucket
// at the top level.
var version4Buckets = [][]byte{bucketMeta, bucketKeys, bucketClients, bucketPending,
	bucketConsents, bucketCodes, bucketGrants, bucketTokens, bucketSettings, bucketCatalog,
	bucketGrantsBySubject, bucketGrantsByClient, bucketAudit, bucketAuditNew,
	bucketAuditBySubject, bucketAuditByClient, bucketUsage, bucketSteps, bucketStepsBySubject}

// writeAsVersion4 gives the file at path the layout and version of schema
// version 4: the nested buckets moved back to the top level, their parent
// gone.
func writeAsVersion4(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range rareBuckets {
			if err := tx.MoveBucket(b, tx.Bucket(bucketRare), nil); err != nil {
				return err
			}
		}
		if err := tx.DeleteBucket(bucketRare); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, []byte("4"))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// siteState is what a store holds in every nested bucket, read through
// the store's contract.
type siteState struct {
	Keys     []store.StoredKey
	Setting  []byte
	Catalog  []byte
	Usage    *store.Usage
	Steps    []store.Step
	Clients  []*store.Client
	Token    *store.Token
	Grant    *store.Grant
	Consents *store.Consent
}

func readState(t *testing.T, s store.Store) siteState {
	t.Helper()
	ctx := context.Background()
	var st siteState
	var err error
	if st.Keys, err = s.LoadKeys(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Setting, err = s.GetSetting(ctx, "policy"); err != nil {
		t.Fatal(err)
	}
	if st.Catalog, err = s.LoadCatalog(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Usage, err = s.LoadUsage(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Steps, err = s.QuerySteps(ctx, store.StepQuery{ClientID: "app-1"}); err != nil {
		t.Fatal(err)
	}
	if st.Clients, err = s.ListClients(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Token, st.Grant, err = s.GetToken(ctx, "access-g1"); err != nil {
		t.Fatal(err)
	}
	if st.Consents, err = s.GetConsent(ctx, "app-1", "ada"); err != nil {
		t.Fatal(err)
	}
	return st
}

// fillSite stores something in every bucket, nested or not.
func fillSite(t *testing.T, s store.Store, now time.Time) {
	t.Helper()
	ctx := context.Background()
	key := store.StoredKey{KID: "k1", JWK: []byte(`{"kty":"EC"}`), CreatedAt: now, SignFrom: now}
	if _, err := s.(*boltStore).InitSite(ctx, key, map[string][]byte{"policy": []byte(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveCatalog(ctx, []byte(`{"courses":[]}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUsage(ctx, []store.UsageDelta{{Minute: now.Truncate(time.Minute), UsageCounts: store.UsageCounts{Tokens: 3, Refused: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddSteps(ctx, []store.Step{{ClientID: "app-1", Subject: "ada", Name: "token", Reason: "pkce_mismatch",
		Error: "invalid_grant", Count: 2, First: now, Last: now.Add(time.Second)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutClient(ctx, &store.Client{ID: "app-1", Name: "App", RedirectURIs: []string{"https://app.example/cb"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutConsent(ctx, "app-1", "ada", &store.Consent{Scopes: []string{"openid"}}); err != nil {
		t.Fatal(err)
	}
	c := &store.Code{Request: store.AuthRequest{ClientID: "app-1", Scopes: []string{"openid"}},
		Identity: store.Identity{Subject: "ada"}, AuthTime: now, ExpiresAt: now.Add(time.Minute)}
	if err := s.PutCode(ctx, "code-1", c); err != nil {
		t.Fatal(err)
	}
	err := s.RedeemCode(ctx, "code-1", func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
		g := &store.Grant{ID: "g1", ClientID: "app-1", Audience: store.AudienceMember, Scopes: c.Request.Scopes,
			Identity: c.Identity, AuthTime: c.AuthTime, CreatedAt: now}
		access := &store.Token{Kind: store.TokenAccess, GrantID: "g1", ClientID: "app-1", Scopes: g.Scopes,
			IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
		return g, []store.IssuedToken{{Hash: "access-g1", Token: access}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// topLevel lists the names of the file's top-level buckets.
func topLevel(t *testing.T, s store.Store) []string {
	t.Helper()
	var names []string
	_ = s.(*boltStore).db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, string(name))
			return nil
		})
	})
	return names
}

// A file of schema version 4 (every bucket at the top level) opens with
// its rare buckets moved under bucketRare, in one commit: everything it
// held reads the same, nothing of the old layout is left, and opening it
// again writes nothing.
func TestBoltNestsTheRareBucketsOfAVersion4File(t *testing.T) {
	path := filepath.Join(t.TempDir(), "school.db")
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fillSite(t, s, now)
	before := readState(t, s)
	s.Close()
	writeAsVersion4(t, path)

	// Export reads the file as it is, before any migration.
	d, err := Export(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Keys, before.Keys) || string(d.Settings["policy"]) != string(before.Setting) ||
		string(d.Catalog) != string(before.Catalog) || len(d.Clients) != 1 || len(d.Grants) != 1 {
		t.Errorf("Export of a version 4 file: %+v", d)
	}

	s, err = Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if after := readState(t, s); !reflect.DeepEqual(after, before) {
		t.Errorf("after the migration:\n%+v\nwant\n%+v", after, before)
	}
	top := strings.Join(topLevel(t, s), " ")
	for _, b := range rareBuckets {
		if strings.Contains(" "+top+" ", " "+string(b)+" ") {
			t.Errorf("bucket %s is still at the top level: %s", b, top)
		}
	}
	var v int
	_ = s.(*boltStore).db.View(func(tx *bolt.Tx) error {
		return json.Unmarshal(tx.Bucket(bucketMeta).Get(keySchemaVersion), &v)
	})
	if v != schemaVersion {
		t.Errorf("schema version %d after the migration, want %d", v, schemaVersion)
	}
	commits, _ := Commits(s)
	s.Close()

	// Opened again, the file is current: no transaction is written, and
	// running the migration on it anyway changes nothing.
	s, err = Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if again, _ := Commits(s); again != commits {
		t.Errorf("opening a migrated file committed %d transactions", again-commits)
	}
	if err := s.(*boltStore).db.Update(writeSchema); err != nil {
		t.Fatalf("the migration run again: %v", err)
	}
	if after := readState(t, s); !reflect.DeepEqual(after, before) {
		t.Errorf("after the migration run again:\n%+v\nwant\n%+v", after, before)
	}
	if again := strings.Join(topLevel(t, s), " "); again != top {
		t.Errorf("top level after the migration run again: %s, want %s", again, top)
	}
}

// A migration that fails part way (here a bucket found in both layouts,
// after the others are moved) leaves the file as it was: the move is one
// transaction, which bbolt commits whole or not at all.
func TestBoltMigrationFailingLeavesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "school.db")
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fillSite(t, s, now)
	before := readState(t, s)
	s.Close()
	writeAsVersion4(t, path)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		nest, err := tx.CreateBucket(bucketRare)
		if err != nil {
			return err
		}
		_, err = nest.CreateBucket(rareBuckets[len(rareBuckets)-1])
		return err
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	if s, err := Open(path, time.Second); err == nil {
		s.Close()
		t.Fatal("a file with a bucket in both layouts opened")
	}
	db, err = bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range rareBuckets {
			if tx.Bucket(b) == nil {
				t.Errorf("bucket %s left the top level", b)
			}
		}
		if n := tx.Bucket(bucketRare).Stats().BucketN; n != 2 {
			t.Errorf("%s holds %d buckets, want only the one made by the test", bucketRare, n-1)
		}
		return tx.Bucket(bucketRare).DeleteBucket(rareBuckets[len(rareBuckets)-1])
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if after := readState(t, s); !reflect.DeepEqual(after, before) {
		t.Errorf("after the migration:\n%+v\nwant\n%+v", after, before)
	}
}

// A file whose top level was split (buckets inline and growing, then past
// a quarter page each) is joined back into one page on open, its data
// kept; one left whole is not written to on open.
func TestBoltJoinsASplitTopLevelOnOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "school.db")
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fillSite(t, s, now)
	before := readState(t, s)
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := [][]byte{bucketCodes, bucketConsents, bucketPending, bucketAuditBySubject, bucketAuditByClient}
	for _, size := range []int{900, 2000} {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, name := range names {
				if err := tx.Bucket(name).Put([]byte("filler"), make([]byte, size)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	err = db.View(func(tx *bolt.Tx) error {
		if rootOnePage(tx) {
			t.Fatal("the test did not split the top level")
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	s, err = Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if one, err := RootOnePage(s); err != nil || !one {
		t.Errorf("the top level is not one page after the open (%v)", err)
	}
	if after := readState(t, s); !reflect.DeepEqual(after, before) {
		t.Errorf("after the open:\n%+v\nwant\n%+v", after, before)
	}
	commits, _ := Commits(s)
	s.Close()
	s, err = Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if again, _ := Commits(s); again != commits {
		t.Errorf("opening a file of one top page committed %d transactions", again-commits)
	}
}
