package pgstore

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

// fullDump is a site with one record of every kind and state, in the
// order Export returns them.
func fullDump(t *testing.T) *store.Dump {
	k1, _ := newKey(t, "k1", epoch)
	k1.RetiredAt = epoch.Add(time.Hour)
	k2, _ := newKey(t, "k2", epoch.Add(time.Hour))
	grant := func(id string, revoked bool) *store.Grant {
		return &store.Grant{ID: id, ClientID: "app-1", Audience: store.AudienceMember, Scopes: []string{"openid"},
			Identity: store.Identity{Subject: "ada", Roles: []string{"teacher"}}, AuthTime: epoch, CreatedAt: epoch, Revoked: revoked}
	}
	// A refresh's time moves with the grant.
	refreshed := func(g *store.Grant) *store.Grant {
		g.RefreshedAt = epoch.Add(time.Minute)
		return g
	}
	token := func(hash, kind, grantID string, revoked bool, rotated time.Time) store.IssuedToken {
		return store.IssuedToken{Hash: hash, Token: &store.Token{Kind: kind, GrantID: grantID, ClientID: "app-1",
			Scopes: []string{"openid"}, IssuedAt: epoch, ExpiresAt: epoch.Add(time.Hour), Revoked: revoked, RotatedAt: rotated}}
	}
	code := func(used bool, grantID string) *store.Code {
		return &store.Code{Request: store.AuthRequest{ClientID: "app-1", Scopes: []string{"openid"}},
			Identity: store.Identity{Subject: "ada"}, AuthTime: epoch, ExpiresAt: epoch.Add(time.Minute), Used: used, GrantID: grantID}
	}
	return &store.Dump{
		Keys: []store.StoredKey{k1, k2},
		Clients: []*store.Client{
			{ID: "app-1", Name: "One", Kind: store.KindApp, SecretHash: "5e", IssuedAt: epoch},
			{ID: "cli-1", Name: "CLI", Kind: store.KindLoopback, RegistrationKey: "rk", IssuedAt: epoch, Reviewed: true},
		},
		Consents: []store.DumpConsent{{ClientID: "app-1", Subject: "ada", Consent: &store.Consent{Scopes: []string{"openid"}, GrantedAt: epoch}}},
		Codes:    []store.DumpCode{{Hash: "c-fresh", Code: code(false, "")}, {Hash: "c-used", Code: code(true, "g-live")}},
		Grants:   []*store.Grant{refreshed(grant("g-live", false)), grant("g-revoked", true)},
		Tokens: []store.IssuedToken{
			token("t-access", store.TokenAccess, "g-live", true, time.Time{}),
			token("t-refresh", store.TokenRefresh, "g-live", false, epoch.Add(time.Minute)),
			token("t-revoked-grant", store.TokenAccess, "g-revoked", false, time.Time{}),
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
	page, err := s.ListGrants(ctx, store.GrantQuery{Subject: "ada", Limit: 10})
	if err != nil || len(page) != 1 || page[0].ID != "g-live" || !page[0].RefreshedAt.Equal(epoch.Add(time.Minute)) {
		t.Errorf("imported grants listed = %+v, %v", page, err)
	}
	err = s.Import(ctx, &store.Dump{Clients: []*store.Client{{ID: "app-2", Kind: store.KindApp}}})
	if !errors.Is(err, errNotEmpty) {
		t.Errorf("second Import = %v, want it refused", err)
	}
	if _, err := s.GetClient(ctx, "app-2"); !errors.Is(err, store.ErrNotFound) {
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
