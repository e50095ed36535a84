package pgstore

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// fullDump is a site with one record of every kind and state, in the
// order Export returns them.
func fullDump(t *testing.T) *authserver.Dump {
	k1, _ := newKey(t, "k1", epoch)
	k1.RetiredAt = epoch.Add(time.Hour)
	k2, _ := newKey(t, "k2", epoch.Add(time.Hour))
	grant := func(id string, revoked bool) *authserver.Grant {
		return &authserver.Grant{ID: id, ClientID: "app-1", Audience: authserver.AudienceMember, Scopes: []string{"openid"},
			Identity: authserver.Identity{Subject: "ada", Roles: []string{"teacher"}}, AuthTime: epoch, CreatedAt: epoch, Revoked: revoked}
	}
	// A refresh's time moves with the grant.
	refreshed := func(g *authserver.Grant) *authserver.Grant {
		g.RefreshedAt = epoch.Add(time.Minute)
		return g
	}
	token := func(hash, kind, grantID string, revoked bool, rotated time.Time) authserver.IssuedToken {
		return authserver.IssuedToken{Hash: hash, Token: &authserver.Token{Kind: kind, GrantID: grantID, ClientID: "app-1",
			Scopes: []string{"openid"}, IssuedAt: epoch, ExpiresAt: epoch.Add(time.Hour), Revoked: revoked, RotatedAt: rotated}}
	}
	code := func(used bool, grantID string) *authserver.Code {
		return &authserver.Code{Request: authserver.AuthRequest{ClientID: "app-1", Scopes: []string{"openid"}},
			Identity: authserver.Identity{Subject: "ada"}, AuthTime: epoch, ExpiresAt: epoch.Add(time.Minute), Used: used, GrantID: grantID}
	}
	return &authserver.Dump{
		Keys: []authserver.StoredKey{k1, k2},
		Clients: []*authserver.Client{
			{ID: "app-1", Name: "One", Kind: authserver.KindApp, SecretHash: "5e", IssuedAt: epoch},
			{ID: "cli-1", Name: "CLI", Kind: authserver.KindLoopback, RegistrationKey: "rk", IssuedAt: epoch, Reviewed: true},
		},
		Consents: []authserver.DumpConsent{{ClientID: "app-1", Subject: "ada", Consent: &authserver.Consent{Scopes: []string{"openid"}, GrantedAt: epoch}}},
		Codes:    []authserver.DumpCode{{Hash: "c-fresh", Code: code(false, "")}, {Hash: "c-used", Code: code(true, "g-live")}},
		Grants:   []*authserver.Grant{refreshed(grant("g-live", false)), grant("g-revoked", true)},
		Tokens: []authserver.IssuedToken{
			token("t-access", authserver.TokenAccess, "g-live", true, time.Time{}),
			token("t-refresh", authserver.TokenRefresh, "g-live", false, epoch.Add(time.Minute)),
			token("t-revoked-grant", authserver.TokenAccess, "g-revoked", false, time.Time{}),
		},
		Settings: map[string][]byte{"switch": []byte("on"), "empty": {}},
		Catalog:  []byte(`{"items":[]}`),
	}
}

// TestImportExport: a site moved in reads back as it was, and a second
// import into it is refused.
func TestImportExport(t *testing.T) {
	dsn := pgcluster.Database(t)
	ctx := testContext(t)
	s := openSite(t, dsn)
	want := fullDump(t)
	if err := s.Import(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("Export after Import =\n%s\nwant\n%s", g, w)
	}
	if tok, g, err := s.GetToken(ctx, "t-refresh"); err != nil || tok.Revoked || g.Revoked || !tok.RotatedAt.Equal(epoch.Add(time.Minute)) {
		t.Errorf("imported refresh token = %+v, %+v, %v", tok, g, err)
	}
	// The imported grants are listed: the live one alone.
	page, err := s.ListGrants(ctx, authserver.GrantQuery{Subject: "ada", Limit: 10})
	if err != nil || len(page) != 1 || page[0].ID != "g-live" || !page[0].RefreshedAt.Equal(epoch.Add(time.Minute)) {
		t.Errorf("imported grants listed = %+v, %v", page, err)
	}
	err = s.Import(ctx, &authserver.Dump{Clients: []*authserver.Client{{ID: "app-2", Kind: authserver.KindApp}}})
	if !errors.Is(err, errNotEmpty) {
		t.Errorf("second Import = %v, want it refused", err)
	}
	if _, err := s.GetClient(ctx, "app-2"); !errors.Is(err, authserver.ErrNotFound) {
		t.Errorf("the refused Import stored a client: %v", err)
	}
}

// TestImportWhole: an Import that fails half way stores nothing.
func TestImportWhole(t *testing.T) {
	dsn := pgcluster.Database(t)
	ctx := testContext(t)
	s := openSite(t, dsn)
	d := fullDump(t)
	d.Grants = append(d.Grants, d.Grants[0]) // a duplicate fails the batch
	if err := s.Import(ctx, d); err == nil {
		t.Fatal("Import of a dump with a duplicate grant succeeded")
	}
	if n := count(t, dsn, `SELECT (SELECT count(*) FROM keys) + (SELECT count(*) FROM clients) + (SELECT count(*) FROM settings)`); n != 0 {
		t.Errorf("a failed Import left %d rows", n)
	}
}
