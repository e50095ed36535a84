package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// audited returns a context whose Audit logs what is stored into *logged.
func audited(logged *[]store.AuditEvent) (context.Context, *store.Audit) {
	a := &store.Audit{RequestID: "req-1", ClientIP: "192.0.2.7",
		Log: func(e store.AuditEvent) { *logged = append(*logged, e) }}
	return store.WithAudit(context.Background(), a), a
}

// eventsOf returns every event q selects, page after page of two.
func eventsOf(t *testing.T, s store.Store, q store.AuditQuery) []store.AuditEvent {
	t.Helper()
	q.Limit = 2
	var all []store.AuditEvent
	for range 1000 {
		page, err := s.QueryAudit(context.Background(), q)
		if err != nil {
			t.Fatalf("QueryAudit(%+v): %v", q, err)
		}
		all = append(all, page.Events...)
		if page.Next == "" {
			return all
		}
		q.Cursor = page.Next
	}
	t.Fatal("QueryAudit pages without end")
	return nil
}

func typesOf(evs []store.AuditEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// testAuditInTransaction: the events recorded on a context are stored by
// the next method that writes, once, with the request's id and address,
// and logged once after the commit; a method that fails stores none.
func testAuditInTransaction(t *testing.T, s store.Store) {
	var logged []store.AuditEvent
	ctx, a := audited(&logged)
	a.Record(store.AuditEvent{Type: store.EventClientDeleted, ClientID: "nobody", Actor: store.ActorOperator, ActorSub: "op"})
	_, err := s.DeleteClient(ctx, "nobody")
	wantErr(t, "DeleteClient(unknown)", err, store.ErrNotFound)
	if evs := eventsOf(t, s, store.AuditQuery{}); len(evs) != 0 || len(logged) != 0 {
		t.Fatalf("a failed write stored %v and logged %v", evs, logged)
	}

	logged = nil
	ctx, a = audited(&logged)
	a.Record(store.AuditEvent{Type: store.EventConsentGranted, Subject: "ada", ClientID: "app-1", Actor: store.ActorMember})
	if err := s.PutConsent(ctx, "app-1", "ada", &store.Consent{Scopes: []string{"openid"}, GrantedAt: epoch}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSetting(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	evs := eventsOf(t, s, store.AuditQuery{})
	if len(evs) != 1 || evs[0].Type != store.EventConsentGranted || evs[0].RequestID != "req-1" ||
		evs[0].ClientIP != "192.0.2.7" || evs[0].ID == "" || evs[0].Time.IsZero() {
		t.Fatalf("stored %+v, want one consent_granted with the request's id, address, an id and a time", evs)
	}
	if len(logged) != 1 || logged[0].ID != evs[0].ID {
		t.Fatalf("logged %+v, want the stored event once", logged)
	}
}

// testAuditStoreDecided: what only the store can tell it records itself:
// a code redeemed or replayed, a refresh rotated or reused, and how many
// grants a disconnect ended.
func testAuditStoreDecided(t *testing.T, s store.Store) {
	ctx := context.Background()
	code := unique("code")
	if err := s.PutCode(ctx, code, newCode("app-1")); err != nil {
		t.Fatal(err)
	}
	var grantID string
	var p pair
	redeem := func() error {
		return s.RedeemCode(ctx, code, func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
			g := newGrant(c)
			var toks []store.IssuedToken
			p, toks = newTokens(g)
			grantID = g.ID
			return g, toks, nil
		})
	}
	if err := redeem(); err != nil {
		t.Fatal(err)
	}
	first := p
	wantErr(t, "replay", redeem(), store.ErrCodeReuse)
	if _, _, err := rotateAt(s, first.refresh, epoch); err != nil {
		t.Fatal(err)
	}
	_, _, err := rotateAt(s, first.refresh, epoch.Add(grace+time.Second))
	wantErr(t, "reuse", err, store.ErrRefreshReuse)

	for _, c := range []struct {
		typ, outcome string
		grants       int
	}{
		{store.EventCodeRedeemed, "issued", 0},
		{store.EventCodeReplay, "grant revoked", 1},
		{store.EventTokenRefreshed, "issued", 0},
		{store.EventRefreshReuse, "grant revoked", 1},
	} {
		evs := eventsOf(t, s, store.AuditQuery{Type: c.typ})
		if len(evs) != 1 {
			t.Errorf("%s: %d events, want 1", c.typ, len(evs))
			continue
		}
		e := evs[0]
		if e.Subject != "ada" || e.ClientID != "app-1" || e.Target != grantID || e.Outcome != c.outcome ||
			e.Grants != c.grants || e.Actor != store.ActorClient {
			t.Errorf("%s: %+v", c.typ, e)
		}
	}

	grantFor(t, s, "app-2", "bea", epoch)
	grantFor(t, s, "app-2", "bea", epoch.Add(time.Second))
	var logged []store.AuditEvent
	actx, a := audited(&logged)
	a.Record(store.AuditEvent{Type: store.EventDisconnected, Subject: "bea", ClientID: "app-2", Actor: store.ActorMember})
	if n, err := s.DisconnectClient(actx, "app-2", "bea"); err != nil || n != 2 {
		t.Fatalf("DisconnectClient = %d, %v", n, err)
	}
	evs := eventsOf(t, s, store.AuditQuery{Type: store.EventDisconnected})
	if len(evs) != 1 || evs[0].Grants != 2 {
		t.Fatalf("disconnect events %+v, want one that ended 2 grants", evs)
	}
}

// testAuditQuery: filters and pages, newest first.
func testAuditQuery(t *testing.T, s store.Store) {
	var logged []store.AuditEvent
	ctx, a := audited(&logged)
	at := func(i int) time.Time { return epoch.Add(time.Duration(i) * time.Minute) }
	all := []store.AuditEvent{
		{Time: at(0), Type: store.EventConsentGranted, Subject: "ada", ClientID: "app-1"},
		{Time: at(1), Type: store.EventCodeIssued, Subject: "ada", ClientID: "app-1"},
		{Time: at(2), Type: store.EventConsentGranted, Subject: "bea", ClientID: "app-1"},
		{Time: at(3), Type: store.EventDisconnected, Subject: "ada", ClientID: "app-2"},
		{Time: at(4), Type: store.EventClientDeleted, ClientID: "app-2", Actor: store.ActorOperator, ActorSub: "ada"},
		{Time: at(5), Type: store.EventKeyRotated, Target: "kid-2"},
		{Time: at(5), Type: store.EventConsentDenied, Subject: "ada", ClientID: "app-1"},
	}
	for _, e := range all {
		a.Record(e)
	}
	if err := s.PutSetting(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		q    store.AuditQuery
		want []int // indexes into all, newest first
	}{
		{"all", store.AuditQuery{}, []int{6, 5, 4, 3, 2, 1, 0}},
		{"subject, as person and as operator", store.AuditQuery{Subject: "ada"}, []int{6, 4, 3, 1, 0}},
		{"client", store.AuditQuery{ClientID: "app-1"}, []int{6, 2, 1, 0}},
		{"subject and client", store.AuditQuery{Subject: "ada", ClientID: "app-1"}, []int{6, 1, 0}},
		{"type", store.AuditQuery{Type: store.EventConsentGranted}, []int{2, 0}},
		{"since", store.AuditQuery{Since: at(4)}, []int{6, 5, 4}},
		{"until", store.AuditQuery{Until: at(2)}, []int{1, 0}},
		{"subject in a window", store.AuditQuery{Subject: "ada", Since: at(1), Until: at(5)}, []int{4, 3, 1}},
		{"client since", store.AuditQuery{ClientID: "app-1", Since: at(1)}, []int{6, 2, 1}},
		{"nobody", store.AuditQuery{Subject: "cid"}, nil},
	} {
		got := eventsOf(t, s, c.q)
		var want []string
		for _, i := range c.want {
			want = append(want, all[i].Type+"@"+all[i].Time.Format(time.TimeOnly))
		}
		var have []string
		for _, e := range got {
			have = append(have, e.Type+"@"+e.Time.UTC().Format(time.TimeOnly))
		}
		if !slices.Equal(have, want) {
			t.Errorf("%s: got %v, want %v", c.name, have, want)
		}
	}
	page, err := s.QueryAudit(context.Background(), store.AuditQuery{Limit: 3})
	if err != nil || len(page.Events) != 3 || page.Next == "" {
		t.Fatalf("a page of 3: %d events, next %q, %v", len(page.Events), page.Next, err)
	}
	for _, c := range []string{"not a cursor", "9000000000000000000.1", "-9223372036854775808.1", "1.0", "1.-5"} {
		_, err = s.QueryAudit(context.Background(), store.AuditQuery{Cursor: c})
		wantErr(t, "the cursor "+c, err, store.ErrBadCursor)
	}
}

// testPurgeAudit: the retention deletes what is older than its bound and
// nothing else.
func testPurgeAudit(t *testing.T, s store.Store) {
	var logged []store.AuditEvent
	ctx, a := audited(&logged)
	for i := range 5 {
		a.Record(store.AuditEvent{Time: epoch.Add(time.Duration(i) * time.Hour), Type: store.EventKeyRotated, Subject: "ada", ClientID: "c"})
	}
	if err := s.PutSetting(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	n, err := s.PurgeAudit(context.Background(), epoch.Add(2*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("PurgeAudit = %d, %v; want 2", n, err)
	}
	for _, q := range []store.AuditQuery{{}, {Subject: "ada"}, {ClientID: "c"}} {
		if evs := eventsOf(t, s, q); len(evs) != 3 || evs[2].Time.Before(epoch.Add(2*time.Hour)) {
			t.Errorf("after the purge, %+v finds %+v", q, evs)
		}
	}
}

// personOf stores what the gateway keeps of a person: a consent, a grant
// with two tokens (one refresh rotated), a code not yet redeemed, a
// pending request and their events.
func personOf(t *testing.T, s store.Store, subject string) (*store.Grant, pair) {
	t.Helper()
	g, p := grantFor(t, s, "app-1", subject, epoch)
	var logged []store.AuditEvent
	ctx, a := audited(&logged)
	a.Record(store.AuditEvent{Type: store.EventConsentGranted, Subject: subject, ClientID: "app-1", Actor: store.ActorMember})
	if err := s.PutConsent(ctx, "app-1", subject, &store.Consent{Scopes: []string{"openid"}, GrantedAt: epoch}); err != nil {
		t.Fatal(err)
	}
	c := newCode("app-1")
	c.Identity.Subject = subject
	if err := s.PutCode(ctx, unique("code"), c); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPending(ctx, &store.PendingAuth{ID: unique("pending"), Identity: store.Identity{Subject: subject},
		ExpiresAt: epoch.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	return g, p
}

func testExportSubject(t *testing.T, s store.Store) {
	ctx := context.Background()
	_, err := s.ExportSubject(ctx, "nobody")
	wantErr(t, "export of an unknown subject", err, store.ErrNotFound)
	g, _ := personOf(t, s, "ada")
	personOf(t, s, "bea")
	d, err := s.ExportSubject(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	if d.Subject != "ada" || len(d.Consents) != 1 || d.Consents[0].ClientID != "app-1" ||
		len(d.Grants) != 1 || d.Grants[0].ID != g.ID || d.Tokens != 2 || d.Codes != 2 || d.Pending != 1 {
		t.Fatalf("export = %+v", d)
	}
	if got := typesOf(d.Events); !slices.Equal(got, []string{store.EventConsentGranted, store.EventCodeRedeemed}) {
		t.Errorf("exported events %v", got)
	}
	for _, e := range d.Events {
		if e.Subject != "ada" {
			t.Errorf("ada's export holds %+v", e)
		}
	}
}

// testEraseSubject: everything of the person goes in one call, their
// tokens stop, one event that names no one stays, others keep theirs;
// erasing again changes nothing and says there is nothing.
func testEraseSubject(t *testing.T, s store.Store) {
	ctx := context.Background()
	_, err := s.EraseSubject(ctx, "nobody")
	wantErr(t, "erasure of an unknown subject", err, store.ErrNotFound)
	if evs := eventsOf(t, s, store.AuditQuery{}); len(evs) != 0 {
		t.Fatalf("a refused erasure stored %v", evs)
	}
	_, ada := personOf(t, s, "ada")
	_, bea := personOf(t, s, "bea")
	var logged []store.AuditEvent
	actx, _ := audited(&logged)
	n, err := s.EraseSubject(actx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	want := store.Erased{Consents: 1, Grants: 1, Revoked: 1, Tokens: 2, Codes: 2, Pending: 1, Events: 2}
	if *n != want {
		t.Errorf("erased %+v, want %+v", *n, want)
	}
	if _, _, err := s.GetToken(ctx, ada.access); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ada's access token after the erasure: %v", err)
	}
	if _, err := s.GetConsent(ctx, "app-1", "ada"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ada's consent after the erasure: %v", err)
	}
	_, err = s.ExportSubject(ctx, "ada")
	wantErr(t, "export after the erasure", err, store.ErrNotFound)
	if evs := eventsOf(t, s, store.AuditQuery{Subject: "ada"}); len(evs) != 0 {
		t.Errorf("events naming ada after the erasure: %+v", evs)
	}
	erased := eventsOf(t, s, store.AuditQuery{Type: store.EventSubjectErased})
	if len(erased) != 1 || erased[0].Subject != "" || erased[0].ActorSub != "" || erased[0].Grants != 1 {
		t.Fatalf("erasure events %+v, want one naming no one", erased)
	}
	if len(logged) != 1 || logged[0].Type != store.EventSubjectErased {
		t.Errorf("logged %+v", logged)
	}
	if revoked(t, s, bea.access) {
		t.Error("the erasure of ada revoked bea's token")
	}
	if d, err := s.ExportSubject(ctx, "bea"); err != nil || len(d.Grants) != 1 || len(d.Events) != 2 {
		t.Errorf("bea after ada's erasure: %+v, %v", d, err)
	}
	_, err = s.EraseSubject(ctx, "ada")
	wantErr(t, "a second erasure", err, store.ErrNotFound)
	if erased := eventsOf(t, s, store.AuditQuery{Type: store.EventSubjectErased}); len(erased) != 1 {
		t.Errorf("a second erasure left %d erasure events", len(erased))
	}
}
