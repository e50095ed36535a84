package pgstore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

// TestNothingSecretStored: after a whole flow, no table holds a raw token,
// code or client secret (the store only ever receives their hashes) nor a
// private key in the clear, as text or as bytes.
func TestNothingSecretStored(t *testing.T) {
	dsn := pgcluster.Database(t)
	ctx := testContext(t)
	s := openSite(t, dsn)
	if _, err := authserver.LoadKeys(ctx, s, epoch); err != nil {
		t.Fatal(err)
	}
	keys, err := s.LoadKeys(ctx)
	if err != nil || len(keys) != 1 {
		t.Fatalf("LoadKeys = %v, %v", keys, err)
	}
	var private struct{ D string }
	if err := json.Unmarshal(keys[0].JWK, &private); err != nil || private.D == "" {
		t.Fatalf("the stored key has no d: %v", err)
	}

	raw := map[string]string{}
	for _, name := range []string{"secret", "code", "access", "refresh", "access2", "refresh2", "csrf"} {
		raw[name] = "sg_" + name + "_" + randomText(t)
	}
	h := func(name string) string { return hashOf(raw[name]) }
	flow(t, s, h)

	dump := dumpTables(t, dsn)
	if !strings.Contains(dump, h("access")) {
		t.Fatal("the dump lacks even the hashes: it dumps nothing")
	}
	secrets := []string{private.D, `"d":`}
	for _, v := range raw {
		secrets = append(secrets, v)
	}
	for _, v := range secrets {
		if strings.Contains(dump, v) || strings.Contains(dump, hex.EncodeToString([]byte(v))) {
			t.Errorf("the database holds %q in the clear", v)
		}
	}
}

// flow runs a site through registration, authorization, redemption,
// rotation and revocation, with hashes of raw values as callers pass them.
func flow(t *testing.T, s *Site, h func(string) string) {
	t.Helper()
	ctx := testContext(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	c := &store.Client{ID: "app-1", Kind: store.KindApp, SecretHash: h("secret"), IssuedAt: epoch}
	must(s.PutClient(ctx, c))
	must(s.PutPending(ctx, &store.PendingAuth{ID: "req", CSRFHash: h("csrf"), ExpiresAt: epoch.Add(time.Minute)}))
	must(s.PutConsent(ctx, "app-1", "ada", &store.Consent{Scopes: []string{"openid"}, GrantedAt: epoch}))
	must(s.PutCode(ctx, h("code"), &store.Code{Request: store.AuthRequest{ClientID: "app-1"}, ExpiresAt: epoch.Add(time.Minute)}))
	must(s.RedeemCode(ctx, h("code"), func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
		return &store.Grant{ID: "g1", ClientID: "app-1", CreatedAt: epoch}, tokenPair("g1", h("access"), h("refresh")), nil
	}))
	must(s.RotateRefresh(ctx, h("refresh"), "", epoch, time.Minute, func(*store.Token, *store.Grant) ([]store.IssuedToken, error) {
		return tokenPair("g1", h("access2"), h("refresh2")), nil
	}))
	must(s.RevokeToken(ctx, h("access")))
	must(s.SaveCatalog(ctx, []byte(`{"items":[]}`)))
	must(s.PutSetting(ctx, "switch", []byte("on")))
}

func tokenPair(grantID, access, refresh string) []store.IssuedToken {
	return []store.IssuedToken{
		{Hash: access, Token: &store.Token{Kind: store.TokenAccess, GrantID: grantID, ClientID: "app-1",
			IssuedAt: epoch, ExpiresAt: epoch.Add(time.Hour)}},
		{Hash: refresh, Token: &store.Token{Kind: store.TokenRefresh, GrantID: grantID, ClientID: "app-1",
			IssuedAt: epoch, ExpiresAt: epoch.Add(24 * time.Hour)}},
	}
}

// hashOf is how the authorization server hashes tokens, codes and secrets
// before they reach the store.
func hashOf(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

func randomText(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// dumpTables returns every row of every table of the database as text.
func dumpTables(t *testing.T, dsn string) string {
	t.Helper()
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 10 {
		t.Fatalf("tables = %v, %v", tables, err)
	}
	var b strings.Builder
	for _, table := range tables {
		var text *string
		sql := `SELECT string_agg(t::text, E'\n') FROM ` + pgx.Identifier{table}.Sanitize() + ` t`
		if err := conn.QueryRow(ctx, sql).Scan(&text); err != nil {
			t.Fatal(err)
		}
		if text != nil {
			b.WriteString(*text + "\n")
		}
	}
	return b.String()
}
