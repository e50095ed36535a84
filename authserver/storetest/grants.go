package storetest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
)

// grantFor stores a code for clientID and subject and redeems it at
// created: a live grant with an access and a refresh token.
func grantFor(t *testing.T, s authserver.Store, clientID, subject string, created time.Time) (*authserver.Grant, pair) {
	t.Helper()
	ctx := context.Background()
	code := unique("code")
	c := newCode(clientID)
	c.Identity = authserver.Identity{Subject: subject, Email: subject + "@school.example", Name: "Person " + subject}
	if err := s.PutCode(ctx, code, c); err != nil {
		t.Fatal(err)
	}
	var g *authserver.Grant
	var p pair
	err := s.RedeemCode(ctx, code, func(c *authserver.Code) (*authserver.Grant, []authserver.IssuedToken, error) {
		g = newGrant(c)
		g.CreatedAt = created
		var toks []authserver.IssuedToken
		p, toks = newTokens(g)
		return g, toks, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return g, p
}

// listAll pages through a list, limit grants at a time, and returns the
// ids in the order given.
func listAll(t *testing.T, s authserver.Store, q authserver.GrantQuery) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("the list does not end")
		}
		page, err := s.ListGrants(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range page {
			ids = append(ids, g.ID)
		}
		if len(page) < q.Limit {
			return ids
		}
		q.After = authserver.CursorOf(page[len(page)-1])
	}
}

func idsOf(gs ...*authserver.Grant) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.ID)
	}
	return out
}

// testListGrants: a person's grants and a client's, each in creation
// order and a page at a time, never another's and never a revoked one.
func testListGrants(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	at := func(i int) time.Time { return epoch.Add(time.Duration(i) * time.Minute) }
	a1, _ := grantFor(t, s, "app-1", "ada", at(3))
	a2, _ := grantFor(t, s, "app-2", "ada", at(1))
	b1, _ := grantFor(t, s, "app-1", "bob", at(2))
	a3, _ := grantFor(t, s, "https://agent.example/client.json", "ada", at(5))
	gone, _ := grantFor(t, s, "app-1", "ada", at(4))
	// Same creation time: the id decides.
	b2, _ := grantFor(t, s, "app-1", "bob", at(2))
	// A subject whose name starts with another's is another person.
	long, _ := grantFor(t, s, "app-1", "adam", at(6))
	if err := s.RevokeGrant(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	bobs := []*authserver.Grant{b1, b2}
	slices.SortFunc(bobs, func(x, y *authserver.Grant) int { return compareStrings(x.ID, y.ID) })
	for _, c := range []struct {
		name string
		q    authserver.GrantQuery
		want []string
	}{
		{"by subject", authserver.GrantQuery{Subject: "ada"}, idsOf(a2, a1, a3)},
		{"by another subject", authserver.GrantQuery{Subject: "bob"}, idsOf(bobs...)},
		{"by a longer subject", authserver.GrantQuery{Subject: "adam"}, idsOf(long)},
		{"by client", authserver.GrantQuery{ClientID: "app-1"}, idsOf(bobs[0], bobs[1], a1, long)},
		{"by a metadata-document client", authserver.GrantQuery{ClientID: "https://agent.example/client.json"}, idsOf(a3)},
		{"unknown subject", authserver.GrantQuery{Subject: "carol"}, nil},
		{"unknown client", authserver.GrantQuery{ClientID: "app-9"}, nil},
		{"neither", authserver.GrantQuery{}, nil},
	} {
		for _, limit := range []int{1, 2, 3, 50} {
			q := c.q
			q.Limit = limit
			if got := listAll(t, s, q); !slices.Equal(got, c.want) {
				t.Errorf("%s, %d a page: %v, want %v", c.name, limit, got, c.want)
			}
		}
	}
	// A page holds what it says it holds.
	page, err := s.ListGrants(ctx, authserver.GrantQuery{Subject: "ada", Limit: 10})
	if err != nil || len(page) != 3 {
		t.Fatalf("ListGrants = %d grants, %v", len(page), err)
	}
	g := page[0]
	if g.ClientID != "app-2" || g.Identity.Subject != "ada" || g.Identity.Email != "ada@school.example" ||
		!g.CreatedAt.Equal(at(1)) || g.Revoked || !g.RefreshedAt.IsZero() || !slices.Equal(g.Scopes, []string{"openid"}) {
		t.Errorf("listed grant = %+v", g)
	}
	// A cursor past the end is an empty page.
	page, err = s.ListGrants(ctx, authserver.GrantQuery{Subject: "ada", Limit: 10, After: authserver.CursorOf(a3)})
	if err != nil || len(page) != 0 {
		t.Errorf("after the last: %d grants, %v", len(page), err)
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// testGrantPages: a person with many grants is listed in bounded pages,
// whatever limit is asked for.
func testGrantPages(t *testing.T, s authserver.Store) {
	const n = 130
	var want []string
	for i := range n {
		g, _ := grantFor(t, s, unique("app"), "many", epoch.Add(time.Duration(i)*time.Second))
		want = append(want, g.ID)
	}
	if got := listAll(t, s, authserver.GrantQuery{Subject: "many", Limit: 50}); !slices.Equal(got, want) {
		t.Errorf("paged list of %d grants: got %d, in order %v", n, len(got), slices.Equal(got, want))
	}
	page, err := s.ListGrants(context.Background(), authserver.GrantQuery{Subject: "many", Limit: 1 << 20})
	if err != nil || len(page) != min(n, authserver.MaxGrantPage) {
		t.Errorf("an unbounded limit gave %d grants, %v", len(page), err)
	}
	page, err = s.ListGrants(context.Background(), authserver.GrantQuery{Subject: "many"})
	if err != nil || len(page) != 1 {
		t.Errorf("no limit gave %d grants, %v; want a page of one", len(page), err)
	}
}

// testGrantCounts: a client's count of live grants follows every way a
// grant stops being live.
func testGrantCounts(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	want := func(what string, w map[string]int) {
		t.Helper()
		got, err := s.GrantCounts(ctx)
		if err != nil || !maps.Equal(got, w) {
			t.Errorf("%s: GrantCounts = %v, %v; want %v", what, got, err, w)
		}
	}
	want("empty", map[string]int{})
	for _, c := range []*authserver.Client{{ID: "app-1", Kind: authserver.KindApp}, {ID: "app-2", Kind: authserver.KindApp},
		{ID: "cli-1", Kind: authserver.KindLoopback}} {
		if err := s.PutClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	g1, _ := grantFor(t, s, "app-1", "ada", epoch)
	grantFor(t, s, "app-1", "bob", epoch)
	_, p3 := grantFor(t, s, "app-1", "carol", epoch)
	grantFor(t, s, "app-2", "ada", epoch)
	cli, _ := grantFor(t, s, "cli-1", "ada", epoch)
	grantFor(t, s, "vendor-1", "ada", epoch)
	want("issued", map[string]int{"app-1": 3, "app-2": 1, "cli-1": 1, "vendor-1": 1})
	if err := s.RevokeGrant(ctx, g1.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeGrant(ctx, g1.ID); err != nil {
		t.Fatal(err)
	}
	want("a grant revoked twice", map[string]int{"app-1": 2, "app-2": 1, "cli-1": 1, "vendor-1": 1})
	if err := s.RevokeToken(ctx, p3.refresh); err != nil {
		t.Fatal(err)
	}
	want("a refresh token revoked", map[string]int{"app-1": 1, "app-2": 1, "cli-1": 1, "vendor-1": 1})
	if _, err := s.DisconnectGrant(ctx, cli.ID, "ada"); err != nil {
		t.Fatal(err)
	}
	want("a grant disconnected", map[string]int{"app-1": 1, "app-2": 1, "vendor-1": 1})
	if _, err := s.DeleteClient(ctx, "app-2"); err != nil {
		t.Fatal(err)
	}
	want("a client deleted", map[string]int{"app-1": 1, "vendor-1": 1})
	if _, err := s.PutSettingRevoking(ctx, "switch", []byte("off"), authserver.KindApp); err != nil {
		t.Fatal(err)
	}
	want("a kind switched off", map[string]int{"vendor-1": 1})
	// Once every token has expired, the purge takes the grants left.
	if err := s.PurgeExpired(ctx, epoch.Add(30*time.Hour)); err != nil {
		t.Fatal(err)
	}
	want("the expired grant purged", map[string]int{})
	grantFor(t, s, "vendor-1", "ada", epoch)
	want("issued again", map[string]int{"vendor-1": 1})
}

// testDisconnectGrant: a person ends their own grant and the consent
// remembered for its client, and nobody else's.
func testDisconnectGrant(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	consent := &authserver.Consent{Scopes: []string{"openid"}, GrantedAt: epoch}
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
		wantErr(t, c.name, err, authserver.ErrNotFound)
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
	wantErr(t, "the disconnected client's consent", err, authserver.ErrNotFound)
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
	if page, _ := s.ListGrants(ctx, authserver.GrantQuery{Subject: "ada", Limit: 10}); len(page) != 1 {
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
	wantErr(t, "consent after a second disconnect", err, authserver.ErrNotFound)
}

// testRefreshedAt: a rotation records its time on the grant when the
// grant's last use is RefreshedPrecision old, and not more often; reading
// a token records nothing.
func testRefreshedAt(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	g, p := grantFor(t, s, "app-1", "ada", epoch)
	if _, _, err := s.GetToken(ctx, p.access); err != nil {
		t.Fatal(err)
	}
	page, err := s.ListGrants(ctx, authserver.GrantQuery{Subject: "ada", Limit: 10})
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
	page, err = s.ListGrants(ctx, authserver.GrantQuery{ClientID: "app-1", Limit: 10})
	if err != nil || len(page) != 1 || !page[0].RefreshedAt.Equal(when) {
		t.Errorf("listed after a refresh: %+v, %v", page, err)
	}
	// A refused rotation records nothing.
	refused := errors.New("refused")
	err = s.RotateRefresh(ctx, next.refresh, when.Add(time.Hour), grace, func(*authserver.Token, *authserver.Grant) ([]authserver.IssuedToken, error) {
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
	soon := when.Add(authserver.RefreshedPrecision - time.Minute)
	third, _, err := rotateAt(s, next.refresh, soon)
	if err != nil {
		t.Fatal(err)
	}
	if _, got, _ := s.GetToken(ctx, third.access); !got.RefreshedAt.Equal(when) {
		t.Errorf("a rotation within the precision moved RefreshedAt to %v; want %v", got.RefreshedAt, when)
	}
	later := when.Add(authserver.RefreshedPrecision)
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
