package pgstore

import (
	"errors"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

// TestSitesIsolated: two schools in one database share no row, even under
// the same names and hashes.
func TestSitesIsolated(t *testing.T) {
	dsn := pgcluster.Database(t)
	ctx := testContext(t)
	p := connect(t, dsn)
	a, err := p.Site(ctx, "https://a.example", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Site(ctx, "https://b.example", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if a.id == b.id {
		t.Fatalf("two issuers got one site id %d", a.id)
	}
	client := &store.Client{ID: "app-1", Kind: store.KindApp, IssuedAt: epoch}
	if err := a.PutClient(ctx, client); err != nil {
		t.Fatal(err)
	}
	issue(t, a, "code", "grant-1", "tok")
	if err := a.PutSetting(ctx, "switch", []byte("on")); err != nil {
		t.Fatal(err)
	}

	if _, err := b.GetClient(ctx, "app-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("b reads a's client: %v", err)
	}
	if list, err := b.ListClients(ctx); err != nil || len(list) != 0 {
		t.Errorf("b lists %v, %v", list, err)
	}
	if _, _, err := b.GetToken(ctx, "tok-access"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("b reads a's token: %v", err)
	}
	if n, err := b.RevokeClientGrants(ctx, "app-1"); err != nil || n != 0 {
		t.Errorf("b revoked %d of a's grants (%v)", n, err)
	}
	if _, err := b.GetSetting(ctx, "switch"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("b reads a's setting: %v", err)
	}
	if err := b.PurgeExpired(ctx, epoch.Add(1000*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// The same code hash at b is b's own: a's stays redeemed, b's is new.
	issue(t, b, "code", "grant-1", "tok")
	if tok, g, err := a.GetToken(ctx, "tok-access"); err != nil || tok.Revoked || g.Revoked {
		t.Errorf("a's token after b's purge and issue = %+v, %+v, %v", tok, g, err)
	}
}

// issue stores a code under hash code and redeems it for a grant and an
// access token stored under tok+"-access".
func issue(t *testing.T, s *Site, code, grantID, tok string) {
	t.Helper()
	ctx := testContext(t)
	c := &store.Code{Request: store.AuthRequest{ClientID: "app-1"}, AuthTime: epoch, ExpiresAt: epoch.Add(time.Minute)}
	if err := s.PutCode(ctx, code, c); err != nil {
		t.Fatal(err)
	}
	err := s.RedeemCode(ctx, code, func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
		g := &store.Grant{ID: grantID, ClientID: "app-1", CreatedAt: epoch}
		return g, []store.IssuedToken{{Hash: tok + "-access", Token: &store.Token{Kind: store.TokenAccess,
			GrantID: grantID, ClientID: "app-1", IssuedAt: epoch, ExpiresAt: epoch.Add(time.Hour)}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
