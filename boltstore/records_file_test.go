package boltstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

// A file of schema version 3, whose tokens and grants are JSON, opens
// without its records rewritten and works: its tokens are read, refreshed,
// revoked and purged, its grants listed, and its file exported.
func TestBoltWorksWithJSONRecordsOfAnOlderFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "school.db")
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	ctx := context.Background()
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	grants := map[string]*store.Grant{}
	tokens := map[string]*store.Token{}
	for i, id := range []string{"g1", "g2"} {
		code := "code-" + id
		c := &store.Code{Request: store.AuthRequest{ClientID: "app-1", Scopes: []string{"openid", "profile"}},
			Identity: store.Identity{Subject: "ada", Email: "ada@example.org", Roles: []string{"student"}},
			AuthTime: now, ExpiresAt: now.Add(time.Minute)}
		if err := s.PutCode(ctx, code, c); err != nil {
			t.Fatal(err)
		}
		err := s.RedeemCode(ctx, code, func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
			g := &store.Grant{ID: id, ClientID: "app-1", Audience: store.AudienceMember, Scopes: c.Request.Scopes,
				Identity: c.Identity, AuthTime: c.AuthTime, CreatedAt: now.Add(time.Duration(i) * time.Second)}
			access := &store.Token{Kind: store.TokenAccess, GrantID: id, ClientID: "app-1", Scopes: g.Scopes,
				IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
			refresh := &store.Token{Kind: store.TokenRefresh, GrantID: id, ClientID: "app-1", Scopes: []string{},
				IssuedAt: now, ExpiresAt: now.Add(30 * 24 * time.Hour)}
			grants[id], tokens["access-"+id], tokens["refresh-"+id] = g, access, refresh
			return g, []store.IssuedToken{{Hash: "access-" + id, Token: access}, {Hash: "refresh-" + id, Token: refresh}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	writeAsVersion3(t, path)

	s, err = Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	if n := jsonRecords(t, s); n != 6 {
		t.Fatalf("%d JSON tokens and grants after the open, want all 6", n)
	}
	tok, g, err := s.GetToken(ctx, "access-g1")
	if err != nil || !reflect.DeepEqual(tok, tokens["access-g1"]) || !reflect.DeepEqual(g, grants["g1"]) {
		t.Fatalf("GetToken = %#v, %#v, %v", tok, g, err)
	}
	if page, err := s.ListGrants(ctx, store.GrantQuery{Subject: "ada", Limit: 10}); err != nil || len(page) != 2 ||
		!reflect.DeepEqual(page[0], grants["g1"]) && !reflect.DeepEqual(page[1], grants["g1"]) {
		t.Fatalf("ListGrants = %v, %v", page, err)
	}
	later := now.Add(2 * time.Hour)
	next := &store.Token{Kind: store.TokenRefresh, GrantID: "g1", ClientID: "app-1", Scopes: []string{"openid"},
		IssuedAt: later, ExpiresAt: later.Add(30 * 24 * time.Hour)}
	err = s.RotateRefresh(ctx, "refresh-g1", "", later, 0, func(t *store.Token, g *store.Grant) ([]store.IssuedToken, error) {
		return []store.IssuedToken{{Hash: "refresh-g1-2", Token: next}}, nil
	})
	if err != nil {
		t.Fatalf("RotateRefresh: %v", err)
	}
	if tok, g, err := s.GetToken(ctx, "refresh-g1"); err != nil || !tok.RotatedAt.Equal(later) || !g.RefreshedAt.Equal(later) {
		t.Errorf("the rotated token and its grant: %#v, %#v, %v", tok, g, err)
	}
	if err := s.RevokeToken(ctx, "refresh-g2"); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	if _, g, err := s.GetToken(ctx, "access-g2"); err != nil || !g.Revoked {
		t.Errorf("revoking g2's refresh token left its grant %#v, %v", g, err)
	}
	conns, err := s.(store.GrantStore).ListConnections(ctx, store.ConnectionQuery{Subject: "ada", Limit: 10})
	if err != nil || len(conns) != 1 {
		t.Errorf("ListConnections = %v, %v; want one", conns, err)
	}
	// The access tokens expire, g2 is revoked: g1 and its two refresh
	// tokens stay.
	if err := s.PurgeExpired(ctx, now.Add(90*time.Minute)); err != nil {
		t.Fatalf("PurgeExpired: %v", err)
	}
	s.Close()
	d, err := Export(path)
	if err != nil {
		t.Fatal(err)
	}
	var hashes []string
	for _, it := range d.Tokens {
		hashes = append(hashes, it.Hash)
	}
	slices.Sort(hashes)
	if !slices.Equal(hashes, []string{"refresh-g1", "refresh-g1-2"}) || len(d.Grants) != 1 || d.Grants[0].ID != "g1" {
		t.Errorf("exported tokens %v and %d grants, want refresh-g1 and refresh-g1-2 of g1", hashes, len(d.Grants))
	}
	for _, it := range d.Tokens {
		if it.Hash == "refresh-g1-2" && !reflect.DeepEqual(it.Token, next) {
			t.Errorf("exported %#v, want %#v", it.Token, next)
		}
	}
}

// writeAsVersion3 rewrites the tokens and grants of the file at path as
// JSON, as a build of schema version 3 wrote them, and sets the version.
func writeAsVersion3(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		if err := rewrite(tx.Bucket(bucketTokens), decodeToken); err != nil {
			return err
		}
		if err := rewrite(tx.Bucket(bucketGrants), decodeGrant); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, []byte("3"))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func rewrite[T any](b *bolt.Bucket, decode func([]byte, *T) error) error {
	old := map[string][]byte{}
	if err := b.ForEach(func(k, v []byte) error {
		var x T
		if err := decode(v, &x); err != nil {
			return err
		}
		raw, err := json.Marshal(&x)
		old[string(k)] = raw
		return err
	}); err != nil {
		return err
	}
	for k, raw := range old {
		if err := b.Put([]byte(k), raw); err != nil {
			return err
		}
	}
	return nil
}

// jsonRecords counts the tokens and grants of s stored as JSON, and checks
// the schema version this build writes.
func jsonRecords(t *testing.T, s store.Store) int {
	t.Helper()
	n := 0
	err := s.(*boltStore).db.View(func(tx *bolt.Tx) error {
		if v := string(tx.Bucket(bucketMeta).Get(keySchemaVersion)); v != fmt.Sprint(schemaVersion) {
			t.Errorf("schema version %s after the open, want %d", v, schemaVersion)
		}
		for _, name := range [][]byte{bucketTokens, bucketGrants} {
			if err := tx.Bucket(name).ForEach(func(_, v []byte) error {
				if v[0] == '{' {
					n++
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A file of schema version 5, whose authorization codes are JSON, opens
// without its codes rewritten and works: a code is redeemed (and its
// replay refused), exported, counted for its person and purged.
func TestBoltWorksWithJSONCodesOfAVersion5File(t *testing.T) {
	path := filepath.Join(t.TempDir(), "school.db")
	now := time.Date(2026, 11, 28, 9, 0, 0, 123456789, time.UTC)
	ctx := context.Background()
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]*store.Code{}
	for i, who := range []string{"ada", "ada", "bob"} {
		c := &store.Code{Request: store.AuthRequest{ClientID: "app-1", RedirectURI: "http://127.0.0.1/cb",
			Scopes: []string{"openid"}, Resource: "https://school.example", Nonce: "n", CodeChallenge: "cc",
			Audience: store.AudienceMember},
			Identity: store.Identity{Subject: who, Email: who + "@example.org", Roles: []string{"student"}},
			AuthTime: now, ExpiresAt: now.Add(time.Duration(i+1) * time.Minute)}
		hash := fmt.Sprintf("code-%d", i)
		codes[hash] = c
		if err := s.PutCode(ctx, hash, c); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := rewrite(tx.Bucket(bucketCodes), decodeCode); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, []byte("5"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	s, err = Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	if n := jsonCodes(t, s); n != 3 {
		t.Fatalf("%d JSON codes after the open, want all 3", n)
	}
	var got store.Code
	err = s.RedeemCode(ctx, "code-0", func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
		got = *c
		return &store.Grant{ID: "g1", ClientID: "app-1", Audience: store.AudienceMember, Scopes: c.Request.Scopes,
			Identity: c.Identity, AuthTime: c.AuthTime, CreatedAt: now}, nil, nil
	})
	if err != nil || !reflect.DeepEqual(&got, codes["code-0"]) {
		t.Fatalf("RedeemCode read %#v, %v; want %#v", got, err, codes["code-0"])
	}
	if n := jsonCodes(t, s); n != 2 {
		t.Errorf("%d JSON codes after a redemption, want 2 (the redeemed one rewritten)", n)
	}
	err = s.RedeemCode(ctx, "code-0", func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
		return nil, nil, errors.New("a replayed code was issued tokens")
	})
	if !errors.Is(err, store.ErrCodeReuse) {
		t.Errorf("the replay: %v, want ErrCodeReuse", err)
	}
	if d, err := s.(store.AuditStore).ExportSubject(ctx, "ada"); err != nil || d.Codes != 2 {
		t.Errorf("ExportSubject counts %v codes, %v; want 2", d, err)
	}
	// code-0 (redeemed) and code-1 expire before the purge, code-2 after.
	if err := s.PurgeExpired(ctx, now.Add(150*time.Second)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	d, err := Export(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Codes) != 1 || d.Codes[0].Hash != "code-2" || !reflect.DeepEqual(d.Codes[0].Code, codes["code-2"]) {
		t.Errorf("exported codes %#v, want code-2 alone, as written", d.Codes)
	}
}

// jsonCodes counts the codes of s stored as JSON.
func jsonCodes(t *testing.T, s store.Store) int {
	t.Helper()
	n := 0
	err := s.(*boltStore).db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCodes).ForEach(func(_, v []byte) error {
			if v[0] == '{' {
				n++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
