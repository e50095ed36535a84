package operator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/pgstore"
	"github.com/schoolgate/schoolgate/store"
)

// A school moved from its bbolt file to PostgreSQL keeps its tokens and
// key ids; the move is refused while the file is held, without the key
// secret, and for a school the database already has.
func TestMigrateStore(t *testing.T) {
	ctx := context.Background()
	const issuer = "https://school.example"
	cfg := authserver.Config{Issuer: issuer, SessionURL: issuer + "/api/session"}
	data := t.TempDir()
	bolt, err := boltstore.Open(filepath.Join(data, "school.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	as, err := authserver.New(ctx, cfg, bolt)
	if err != nil {
		t.Fatal(err)
	}
	kids := as.Keys().KIDs()
	raw := "sgat_moved-token-value"
	sum := sha256.Sum256([]byte(raw))
	now := time.Now().UTC()
	if err := bolt.PutCode(ctx, "code", &store.Code{Request: store.AuthRequest{ClientID: "app"}, ExpiresAt: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	err = bolt.RedeemCode(ctx, "code", func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
		return &store.Grant{ID: "g1", ClientID: "app", Audience: store.AudienceMember, CreatedAt: now},
			[]store.IssuedToken{{Hash: hex.EncodeToString(sum[:]), Token: &store.Token{Kind: store.TokenAccess,
				GrantID: "g1", ClientID: "app", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dsn := pgcluster.Database(t)
	var out bytes.Buffer

	if err := migrateStore(ctx, &out, data, issuer, dsn, "k"); err == nil || !strings.Contains(err.Error(), "stop Caddy first") {
		t.Fatalf("move of a held file: %v", err)
	}
	bolt.Close()
	if err := migrateStore(ctx, &out, data, issuer, dsn, ""); err == nil || !strings.Contains(err.Error(), EnvKeySecret) {
		t.Fatalf("move without a secret: %v", err)
	}
	if err := migrateStore(ctx, &out, data, "not an origin", dsn, "k"); err == nil || !strings.Contains(err.Error(), "--issuer") {
		t.Fatalf("move with a bad issuer: %v", err)
	}
	out.Reset()
	if err := migrateStore(ctx, &out, data, issuer+"/", dsn, "k"); err != nil {
		t.Fatalf("move: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "tokens=1") || !strings.Contains(out.String(), "in the database for "+issuer) {
		t.Errorf("the move's report lacks the counts:\n%s", out.String())
	}
	if err := migrateStore(ctx, &out, data, issuer, dsn, "k"); err == nil {
		t.Error("a second move into a school with data succeeded")
	}

	pool, err := pgstore.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	site, err := pool.Site(ctx, issuer, "k")
	if err != nil {
		t.Fatal(err)
	}
	pgCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	moved, err := authserver.New(pgCtx, cfg, site)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(moved.Keys().KIDs(), kids) {
		t.Errorf("key ids %v after the move, %v before", moved.Keys().KIDs(), kids)
	}
	if _, err := moved.LookupAccessToken(ctx, raw); err != nil {
		t.Errorf("a token issued before the move: %v", err)
	}
	if _, err := pool.Site(ctx, issuer, "wrong"); err == nil {
		t.Error("the moved keys open with another secret")
	}
}

func TestMigrateDB(t *testing.T) {
	dsn := pgcluster.Database(t)
	var out bytes.Buffer
	ctx := context.Background()
	if err := migrateDB(ctx, &out, dsn); err != nil || !strings.Contains(out.String(), "applied") {
		t.Fatalf("first run: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := migrateDB(ctx, &out, dsn); err != nil || !strings.Contains(out.String(), "schema up to date") {
		t.Fatalf("second run: %v\n%s", err, out.String())
	}
	if err := migrateDB(ctx, &out, ""); err == nil || !strings.Contains(err.Error(), EnvDatabaseURL) {
		t.Errorf("no DSN: %v", err)
	}
}
