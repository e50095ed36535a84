package storetest

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// grantFor stores a code for clientID and subject and redeems it at
// created: a live grant with an access and a refresh token.
func grantFor(t *testing.T, s store.Store, clientID, subject string, created time.Time) (*store.Grant, pair) {
	t.Helper()
	return grantEdited(t, s, clientID, subject, created, nil)
}

// grantEdited is grantFor with the grant changed by edit before it is
// stored (its scopes, its audience).
func grantEdited(t *testing.T, s store.Store, clientID, subject string, created time.Time, edit func(*store.Grant)) (*store.Grant, pair) {
	t.Helper()
	ctx := context.Background()
	code := unique("code")
	c := newCode(clientID)
	c.Identity = store.Identity{Subject: subject, Email: subject + "@school.example", Name: "Person " + subject}
	if err := s.PutCode(ctx, code, c); err != nil {
		t.Fatal(err)
	}
	var g *store.Grant
	var p pair
	err := s.RedeemCode(ctx, code, func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
		g = newGrant(c)
		g.CreatedAt = created
		if edit != nil {
			edit(g)
		}
		var toks []store.IssuedToken
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
func listAll(t *testing.T, s store.Store, q store.GrantQuery) []string {
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
		q.After = store.CursorOf(page[len(page)-1])
	}
}

func idsOf(gs ...*store.Grant) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.ID)
	}
	return out
}

// testListGrants: a person's grants, application by application, and a
// client's, person by person, each group in creation order, the groups in
// byte order, a page at a time; never another's and never a revoked one.
func testListGrants(t *testing.T, s store.Store) {
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
	// Groups compare byte by byte: "app-10" before "app-9", upper case
	// before lower, whatever their lengths or a database's collation.
	c10, _ := grantFor(t, s, "tool-10", "cyd", at(9))
	c9, _ := grantFor(t, s, "tool-9", "cyd", at(7))
	cUp, _ := grantFor(t, s, "Tool-3", "cyd", at(8))
	dUp, _ := grantFor(t, s, "tool-9", "Dave", at(9))
	dLow, _ := grantFor(t, s, "tool-9", "dave", at(1))
	if err := s.RevokeGrant(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	bobs := []*store.Grant{b1, b2}
	slices.SortFunc(bobs, func(x, y *store.Grant) int { return compareStrings(x.ID, y.ID) })
	for _, c := range []struct {
		name string
		q    store.GrantQuery
		want []string
	}{
		{"by subject", store.GrantQuery{Subject: "ada"}, idsOf(a1, a2, a3)},
		{"by another subject", store.GrantQuery{Subject: "bob"}, idsOf(bobs...)},
		{"by a longer subject", store.GrantQuery{Subject: "adam"}, idsOf(long)},
		{"by client", store.GrantQuery{ClientID: "app-1"}, idsOf(a1, long, bobs[0], bobs[1])},
		{"by subject, byte order", store.GrantQuery{Subject: "cyd"}, idsOf(cUp, c10, c9)},
		{"by client, byte order", store.GrantQuery{ClientID: "tool-9"}, idsOf(dUp, c9, dLow)},
		{"by a metadata-document client", store.GrantQuery{ClientID: "https://agent.example/client.json"}, idsOf(a3)},
		{"unknown subject", store.GrantQuery{Subject: "carol"}, nil},
		{"unknown client", store.GrantQuery{ClientID: "app-9"}, nil},
		{"neither", store.GrantQuery{}, nil},
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
	page, err := s.ListGrants(ctx, store.GrantQuery{Subject: "ada", Limit: 10})
	if err != nil || len(page) != 3 {
		t.Fatalf("ListGrants = %d grants, %v", len(page), err)
	}
	g := page[1]
	if g.ClientID != "app-2" || g.Identity.Subject != "ada" || g.Identity.Email != "ada@school.example" ||
		!g.CreatedAt.Equal(at(1)) || g.Revoked || !g.RefreshedAt.IsZero() || !slices.Equal(g.Scopes, []string{"openid"}) {
		t.Errorf("listed grant = %+v", g)
	}
	// A cursor past the end is an empty page.
	page, err = s.ListGrants(ctx, store.GrantQuery{Subject: "ada", Limit: 10, After: store.CursorOf(a3)})
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
func testGrantPages(t *testing.T, s store.Store) {
	const n = 130
	var grants []*store.Grant
	for i := range n {
		g, _ := grantFor(t, s, unique("app"), "many", epoch.Add(time.Duration(i)*time.Second))
		grants = append(grants, g)
	}
	// One grant per client: the groups' order, client ids byte by byte.
	slices.SortFunc(grants, func(x, y *store.Grant) int { return compareStrings(x.ClientID, y.ClientID) })
	want := idsOf(grants...)
	if got := listAll(t, s, store.GrantQuery{Subject: "many", Limit: 50}); !slices.Equal(got, want) {
		t.Errorf("paged list of %d grants: got %d, in order %v", n, len(got), slices.Equal(got, want))
	}
	page, err := s.ListGrants(context.Background(), store.GrantQuery{Subject: "many", Limit: 1 << 20})
	if err != nil || len(page) != min(n, store.MaxGrantPage) {
		t.Errorf("an unbounded limit gave %d grants, %v", len(page), err)
	}
	page, err = s.ListGrants(context.Background(), store.GrantQuery{Subject: "many"})
	if err != nil || len(page) != 1 {
		t.Errorf("no limit gave %d grants, %v; want a page of one", len(page), err)
	}
}

// testGrantCounts: a client's count of people, and of their live
// grants, follows every way a grant stops being live.
func testGrantCounts(t *testing.T, s store.Store) {
	ctx := context.Background()
	type count = store.GrantCount
	pg := func(people, grants int) count { return count{People: people, Grants: grants} }
	want := func(what string, w map[string]count) {
		t.Helper()
		got, err := s.GrantCounts(ctx)
		if err != nil || !maps.Equal(got, w) {
			t.Errorf("%s: GrantCounts = %v, %v; want %v", what, got, err, w)
		}
	}
	want("empty", map[string]count{})
	for _, c := range []*store.Client{{ID: "app-1", Kind: store.KindApp}, {ID: "app-2", Kind: store.KindApp},
		{ID: "cli-1", Kind: store.KindLoopback}} {
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
	want("issued", map[string]count{"app-1": pg(3, 3), "app-2": pg(1, 1), "cli-1": pg(1, 1), "vendor-1": pg(1, 1)})
	// A person who authorized twice is one person with two grants; a
	// subject that starts with another's is another person.
	grantFor(t, s, "app-1", "bob", epoch.Add(time.Minute))
	grantFor(t, s, "app-2", "adam", epoch)
	want("authorized again", map[string]count{"app-1": pg(3, 4), "app-2": pg(2, 2), "cli-1": pg(1, 1), "vendor-1": pg(1, 1)})
	if err := s.RevokeGrant(ctx, g1.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeGrant(ctx, g1.ID); err != nil {
		t.Fatal(err)
	}
	want("a grant revoked twice", map[string]count{"app-1": pg(2, 3), "app-2": pg(2, 2), "cli-1": pg(1, 1), "vendor-1": pg(1, 1)})
	if err := s.RevokeToken(ctx, p3.refresh); err != nil {
		t.Fatal(err)
	}
	want("a refresh token revoked", map[string]count{"app-1": pg(1, 2), "app-2": pg(2, 2), "cli-1": pg(1, 1), "vendor-1": pg(1, 1)})
	if _, err := s.DisconnectGrant(ctx, cli.ID, "ada"); err != nil {
		t.Fatal(err)
	}
	want("a grant disconnected", map[string]count{"app-1": pg(1, 2), "app-2": pg(2, 2), "vendor-1": pg(1, 1)})
	if n, err := s.DisconnectClient(ctx, "app-1", "bob"); err != nil || n != 2 {
		t.Fatalf("DisconnectClient = %d, %v", n, err)
	}
	want("a person disconnected", map[string]count{"app-2": pg(2, 2), "vendor-1": pg(1, 1)})
	if _, err := s.DeleteClient(ctx, "app-2"); err != nil {
		t.Fatal(err)
	}
	want("a client deleted", map[string]count{"vendor-1": pg(1, 1)})
	grantFor(t, s, "app-1", "dora", epoch)
	if _, err := s.PutSettingRevoking(ctx, "switch", []byte("off"), store.KindApp); err != nil {
		t.Fatal(err)
	}
	want("a kind switched off", map[string]count{"vendor-1": pg(1, 1)})
	// Once every token has expired, the purge takes the grants left.
	if err := s.PurgeExpired(ctx, epoch.Add(30*time.Hour)); err != nil {
		t.Fatal(err)
	}
	want("the expired grant purged", map[string]count{})
	grantFor(t, s, "vendor-1", "ada", epoch)
	want("issued again", map[string]count{"vendor-1": pg(1, 1)})
}

// testListConnections: a person's grants are one connection per
// application however many they hold, a client's one per person, in the
// order of the grant lists, a page of whole connections at a time.
func testListConnections(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := func(i int) time.Time { return epoch.Add(time.Duration(i) * time.Minute) }
	scoped := func(scopes ...string) func(*store.Grant) {
		return func(g *store.Grant) { g.Scopes = scopes }
	}
	// ada allowed app-1 three times, with other scopes each time and a new
	// email the last time; the earliest is refreshed last.
	grantEdited(t, s, "app-1", "ada", at(2), scoped("openid", "profile"))
	_, refreshed := grantEdited(t, s, "app-1", "ada", at(1), scoped("openid", "account:read"))
	grantEdited(t, s, "app-1", "ada", at(5), func(g *store.Grant) {
		g.Scopes, g.Identity.Email = []string{"openid"}, "ada@new.example"
	})
	if _, _, err := rotateAt(s, refreshed.refresh, at(90)); err != nil {
		t.Fatal(err)
	}
	grantFor(t, s, "app-2", "ada", at(3))
	grantEdited(t, s, "app-3", "ada", at(4), func(g *store.Grant) { g.Audience = store.AudienceOperator })
	gone, _ := grantFor(t, s, "app-4", "ada", at(4))
	if err := s.RevokeGrant(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	grantFor(t, s, "app-1", "bob", at(6))
	// A tool authorized sixty times, more than a page of grants.
	const times = 60
	for i := range times {
		grantFor(t, s, "tool", "ada", at(10+i))
	}

	list := func(q store.ConnectionQuery) []*store.Connection {
		t.Helper()
		got, err := s.ListConnections(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	conns := list(store.ConnectionQuery{Subject: "ada", Limit: 10})
	if got := groupsOf(conns, true); !slices.Equal(got, []string{"app-1", "app-2", "app-3", "tool"}) {
		t.Fatalf("ada's connections: %v", got)
	}
	app1 := conns[0]
	if app1.Grants != 3 || !slices.Equal(app1.Scopes, []string{"openid", "account:read", "profile"}) ||
		!app1.Since.Equal(at(1)) || !app1.LastUsed.Equal(at(90)) || app1.Identity.Subject != "ada" ||
		app1.Identity.Email != "ada@new.example" || !slices.Equal(app1.Audiences, []string{store.AudienceMember}) {
		t.Errorf("app-1's connection = %+v", app1)
	}
	if c := conns[1]; c.Grants != 1 || !c.Since.Equal(at(3)) || !c.LastUsed.Equal(at(3)) {
		t.Errorf("app-2's connection = %+v", c)
	}
	if c := conns[2]; !slices.Equal(c.Audiences, []string{store.AudienceOperator}) {
		t.Errorf("app-3's connection = %+v; want the operator audience", c)
	}
	if c := conns[3]; c.Grants != times || !c.Since.Equal(at(10)) || !c.LastUsed.Equal(at(10+times-1)) {
		t.Errorf("the tool's connection: %d grants, %v to %v", c.Grants, c.Since, c.LastUsed)
	}
	// A page at a time, each connection whole.
	for _, limit := range []int{1, 2, 3} {
		var groups []string
		q := store.ConnectionQuery{Subject: "ada", Limit: limit}
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("the list does not end")
			}
			page := list(q)
			groups = append(groups, groupsOf(page, true)...)
			for _, c := range page {
				if c.ClientID == "tool" && c.Grants != times {
					t.Errorf("%d a page: the tool's connection holds %d grants", limit, c.Grants)
				}
			}
			if len(page) < limit {
				break
			}
			q.After = page[len(page)-1].ClientID
		}
		if !slices.Equal(groups, []string{"app-1", "app-2", "app-3", "tool"}) {
			t.Errorf("%d a page: %v", limit, groups)
		}
	}
	// An application's people, one each.
	people := list(store.ConnectionQuery{ClientID: "app-1", Limit: 10})
	if got := groupsOf(people, false); !slices.Equal(got, []string{"ada", "bob"}) || people[0].Grants != 3 || people[1].Grants != 1 {
		t.Errorf("app-1's people: %v", got)
	}
	if got := groupsOf(list(store.ConnectionQuery{ClientID: "app-1", After: "ada", Limit: 10}), false); !slices.Equal(got, []string{"bob"}) {
		t.Errorf("app-1's people after ada: %v", got)
	}
	for _, q := range []store.ConnectionQuery{
		{Subject: "carol", Limit: 10},
		{ClientID: "app-4", Limit: 10},
		{Subject: "ada", After: "tool", Limit: 10},
		{Limit: 10},
	} {
		if got := list(q); len(got) != 0 {
			t.Errorf("%+v: %d connections", q, len(got))
		}
	}
}

// groupsOf is each connection's group: its client, or its person.
func groupsOf(conns []*store.Connection, byClient bool) []string {
	var out []string
	for _, c := range conns {
		if byClient {
			out = append(out, c.ClientID)
		} else {
			out = append(out, c.Identity.Subject)
		}
	}
	return out
}
