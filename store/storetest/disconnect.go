package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// testDisconnectGrant: a person ends their own grant and the consent
// remembered for its client, and nobody else's.
func testDisconnectGrant(t *testing.T, s store.Store) {
	ctx := context.Background()
	consent := &store.Consent{Scopes: []string{"openid"}, GrantedAt: epoch}
	for _, c := range [][2]string{{"app-1", "ada"}, {"app-2", "ada"}, {"app-1", "bob"}} {
		if err := s.PutConsent(ctx, c[0], c[1], consent); err != nil {
			t.Fatal(err)
		}
	}
	g, p := grantFor(t, s, "app-1", "ada", epoch)
	_, other := grantFor(t, s, "app-2", "ada", epoch)
	_, bobs := grantFor(t, s, "app-1", "bob", epoch)
	for _, c := range []struct{ name, id, subject string }{
		{"another person's", g.ID, "bob"},
		{"no person", g.ID, ""},
		{"unknown grant", "no-such-grant", "ada"},
		{"no grant", "", "ada"},
	} {
		_, err := s.DisconnectGrant(ctx, c.id, c.subject)
		wantErr(t, c.name, err, store.ErrNotFound)
	}
	if revoked(t, s, p.access) || revoked(t, s, p.refresh) {
		t.Fatal("a refused disconnect revoked the grant")
	}
	if _, err := s.GetConsent(ctx, "app-1", "ada"); err != nil {
		t.Fatalf("a refused disconnect forgot the consent: %v", err)
	}
	got, err := s.DisconnectGrant(ctx, g.ID, "ada")
	if err != nil || got.ID != g.ID || got.ClientID != "app-1" || got.Revoked {
		t.Fatalf("DisconnectGrant = %+v, %v; want the live grant as found", got, err)
	}
	if !revoked(t, s, p.access) || !revoked(t, s, p.refresh) {
		t.Error("a disconnected grant's tokens still work")
	}
	_, err = s.GetConsent(ctx, "app-1", "ada")
	wantErr(t, "the disconnected client's consent", err, store.ErrNotFound)
	for _, c := range [][2]string{{"app-2", "ada"}, {"app-1", "bob"}} {
		if _, err := s.GetConsent(ctx, c[0], c[1]); err != nil {
			t.Errorf("consent of %s to %s was forgotten: %v", c[1], c[0], err)
		}
	}
	for _, q := range []pair{other, bobs} {
		if revoked(t, s, q.access) || revoked(t, s, q.refresh) {
			t.Error("another grant was revoked")
		}
	}
	if page, _ := s.ListGrants(ctx, store.GrantQuery{Subject: "ada", Limit: 10}); len(page) != 1 {
		t.Errorf("%d grants listed after the disconnect, want the other one", len(page))
	}
	// A second disconnect (a stale page) finds the grant revoked already
	// and still forgets a consent given since.
	if err := s.PutConsent(ctx, "app-1", "ada", consent); err != nil {
		t.Fatal(err)
	}
	got, err = s.DisconnectGrant(ctx, g.ID, "ada")
	if err != nil || !got.Revoked {
		t.Fatalf("second DisconnectGrant = %+v, %v; want the grant, revoked", got, err)
	}
	_, err = s.GetConsent(ctx, "app-1", "ada")
	wantErr(t, "consent after a second disconnect", err, store.ErrNotFound)
}

// testRefreshedAt: a rotation records its time on the grant when the
// grant's last use is RefreshedPrecision old, and not more often; reading
// a token records nothing.
func testRefreshedAt(t *testing.T, s store.Store) {
	ctx := context.Background()
	g, p := grantFor(t, s, "app-1", "ada", epoch)
	if _, _, err := s.GetToken(ctx, p.access); err != nil {
		t.Fatal(err)
	}
	page, err := s.ListGrants(ctx, store.GrantQuery{Subject: "ada", Limit: 10})
	if err != nil || len(page) != 1 || !page[0].RefreshedAt.IsZero() {
		t.Fatalf("before a refresh: %+v, %v", page, err)
	}
	when := epoch.Add(90 * time.Minute)
	next, _, err := rotateAt(s, p.refresh, when)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := s.GetToken(ctx, next.access)
	if err != nil || !got.RefreshedAt.Equal(when) || got.ID != g.ID {
		t.Errorf("grant after a refresh: %+v, %v; want RefreshedAt %v", got, err, when)
	}
	page, err = s.ListGrants(ctx, store.GrantQuery{ClientID: "app-1", Limit: 10})
	if err != nil || len(page) != 1 || !page[0].RefreshedAt.Equal(when) {
		t.Errorf("listed after a refresh: %+v, %v", page, err)
	}
	// A refused rotation records nothing.
	refused := errors.New("refused")
	err = s.RotateRefresh(ctx, next.refresh, "", when.Add(time.Hour), grace, func(*store.Token, *store.Grant) ([]store.IssuedToken, error) {
		return nil, refused
	})
	if err != refused {
		t.Fatalf("RotateRefresh = %v", err)
	}
	if _, got, _ := s.GetToken(ctx, next.access); !got.RefreshedAt.Equal(when) {
		t.Errorf("a refused rotation moved RefreshedAt to %v", got.RefreshedAt)
	}
	// Within RefreshedPrecision of the recorded time a rotation leaves it
	// (the grant is not rewritten on every refresh); one later moves it.
	soon := when.Add(store.RefreshedPrecision - time.Minute)
	third, _, err := rotateAt(s, next.refresh, soon)
	if err != nil {
		t.Fatal(err)
	}
	if _, got, _ := s.GetToken(ctx, third.access); !got.RefreshedAt.Equal(when) {
		t.Errorf("a rotation within the precision moved RefreshedAt to %v; want %v", got.RefreshedAt, when)
	}
	later := when.Add(store.RefreshedPrecision)
	fourth, _, err := rotateAt(s, third.refresh, later)
	if err != nil {
		t.Fatal(err)
	}
	if _, got, _ := s.GetToken(ctx, fourth.access); !got.RefreshedAt.Equal(later) {
		t.Errorf("a rotation a precision later left RefreshedAt at %v; want %v", got.RefreshedAt, later)
	}
	// A grant's creation is its first use: a rotation within the
	// precision of it records nothing.
	_, young := grantFor(t, s, "app-1", "bea", epoch)
	fresh, _, err := rotateAt(s, young.refresh, epoch.Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, got, _ := s.GetToken(ctx, fresh.access); !got.RefreshedAt.IsZero() || !got.LastUsed().Equal(epoch) {
		t.Errorf("a rotation 10 minutes after the grant's creation recorded %v (last used %v)", got.RefreshedAt, got.LastUsed())
	}
}

// testDisconnectClient: a person ends their whole connection to one
// application (every grant, the remembered consent) and nothing else: not
// their other applications, not another person's grants of it.
func testDisconnectClient(t *testing.T, s store.Store) {
	ctx := context.Background()
	consent := &store.Consent{Scopes: []string{"openid"}, GrantedAt: epoch}
	for _, c := range [][2]string{{"app-1", "ada"}, {"app-2", "ada"}, {"app-1", "bob"}} {
		if err := s.PutConsent(ctx, c[0], c[1], consent); err != nil {
			t.Fatal(err)
		}
	}
	// Two devices, the second a minute later.
	_, first := grantFor(t, s, "app-1", "ada", epoch)
	_, second := grantFor(t, s, "app-1", "ada", epoch.Add(time.Minute))
	_, other := grantFor(t, s, "app-2", "ada", epoch)
	_, bobs := grantFor(t, s, "app-1", "bob", epoch)
	// A subject that starts with ada's, and a client that starts with
	// app-1's, are others.
	_, adams := grantFor(t, s, "app-1", "adam", epoch)
	_, longer := grantFor(t, s, "app-10", "ada", epoch)
	untouched := []pair{other, bobs, adams, longer}
	live := func(what string, ps ...pair) {
		t.Helper()
		for _, p := range ps {
			if revoked(t, s, p.access) || revoked(t, s, p.refresh) {
				t.Errorf("%s: a grant that should live was revoked", what)
			}
		}
	}
	for _, c := range []struct{ name, client, subject string }{
		{"no person", "app-1", ""},
		{"no client", "", "ada"},
		{"an unknown client", "app-9", "ada"},
		{"a client the person never used", "app-2", "bob"},
		{"an unknown person", "app-1", "carol"},
		{"a prefix of the client", "app-", "ada"},
		{"a prefix of the person", "app-1", "ad"},
	} {
		n, err := s.DisconnectClient(ctx, c.client, c.subject)
		wantErr(t, c.name, err, store.ErrNotFound)
		if n != 0 {
			t.Errorf("%s: %d grants ended", c.name, n)
		}
	}
	live("after refused disconnects", append(untouched, first, second)...)
	if _, err := s.GetConsent(ctx, "app-1", "ada"); err != nil {
		t.Fatalf("a refused disconnect forgot the consent: %v", err)
	}

	n, err := s.DisconnectClient(ctx, "app-1", "ada")
	if err != nil || n != 2 {
		t.Fatalf("DisconnectClient = %d, %v; want both grants ended", n, err)
	}
	for i, p := range []pair{first, second} {
		if !revoked(t, s, p.access) || !revoked(t, s, p.refresh) {
			t.Errorf("grant %d of the disconnected application still works", i+1)
		}
	}
	live("after the disconnect", untouched...)
	_, err = s.GetConsent(ctx, "app-1", "ada")
	wantErr(t, "the disconnected application's consent", err, store.ErrNotFound)
	for _, c := range [][2]string{{"app-2", "ada"}, {"app-1", "bob"}} {
		if _, err := s.GetConsent(ctx, c[0], c[1]); err != nil {
			t.Errorf("consent of %s to %s was forgotten: %v", c[1], c[0], err)
		}
	}
	page, err := s.ListConnections(ctx, store.ConnectionQuery{Subject: "ada", Limit: 10})
	if err != nil || len(page) != 2 || page[0].ClientID != "app-10" || page[1].ClientID != "app-2" {
		t.Errorf("ada's connections after the disconnect: %+v, %v", page, err)
	}

	// Once more (a stale page, a second click): nothing is left, nothing
	// changes.
	n, err = s.DisconnectClient(ctx, "app-1", "ada")
	wantErr(t, "a second disconnect", err, store.ErrNotFound)
	if n != 0 {
		t.Errorf("a second disconnect ended %d grants", n)
	}
	live("after a second disconnect", untouched...)
	// A consent remembered since, with nothing live: forgotten, and
	// reported as disconnected already (no grant ended, no error).
	if err := s.PutConsent(ctx, "app-1", "ada", consent); err != nil {
		t.Fatal(err)
	}
	n, err = s.DisconnectClient(ctx, "app-1", "ada")
	if err != nil || n != 0 {
		t.Fatalf("disconnecting a consent alone = %d, %v; want 0 and no error", n, err)
	}
	_, err = s.GetConsent(ctx, "app-1", "ada")
	wantErr(t, "the consent remembered since", err, store.ErrNotFound)
	live("after the consent was forgotten", untouched...)
}
