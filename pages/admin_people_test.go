package pages

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/sitepath"
)

var reConnectedRow = regexp.MustCompile(`<tr data-client-id="([^"]+)"><td>[^<]*</td><td>[^<]*</td><td[^>]* class="count">(\d+)</td>`)

// The operator sees, per application, how many people are connected
// (once each, however many devices), then who, one row per person, and
// disconnects a person: every grant the application holds for them ends,
// and nobody else's. One grant alone ends when a form names it instead.
func TestAdminConnectedPeople(t *testing.T) {
	f := newFixture(t)
	f.storedClients()
	a := f.grantTo(memberClient, "student", "openid", "account:read")
	f.clock.Advance(30 * time.Minute)
	a2 := f.grantTo(memberClient, "student", "openid")
	b := f.grantTo(memberClient, "student2", "openid")
	c := f.grantTo("app_planner", "student", "openid", "account:write")
	f.grantTo("sgc_cli", "owner", "openid", "courses:read")

	rec := f.adminGet(theAdminPaths.Overview, "owner")
	counts := map[string]string{}
	for _, m := range reConnectedRow.FindAllStringSubmatch(rec.Body.String(), -1) {
		counts[htmlUnescape(m[1])] = m[2]
	}
	want := map[string]string{memberClient: "2", "app_planner": "1", "sgc_cli": "1", confidential: "0", operatorClient: "0"}
	for id, n := range want {
		if counts[id] != n {
			t.Errorf("overview count of %s = %q, want %s (all: %v)", id, counts[id], n, counts)
		}
	}

	rec = f.adminGet(adminPathPeople+"?client_id="+memberClient, "owner")
	page := htmlUnescape(rec.Body.String())
	if rec.Code != http.StatusOK {
		t.Fatalf("people page: %d\n%s", rec.Code, page)
	}
	checkPageHeaders(t, rec)
	for _, s := range []string{"Sam Student <student@demo.school>", "Second <second@demo.school>", `id="people-count">2<`,
		`id="grant-count">3<`, `class="grants">2</td>`, "<code>account:read</code>",
		`class="since"><time datetime="2026-11-23T10:00:00Z"`, `class="last-used"><time datetime="2026-11-23T10:30:00Z"`} {
		if !strings.Contains(page, s) {
			t.Errorf("the people page lacks %q", s)
		}
	}
	if n := strings.Count(page, `<tr class="person"`); n != 2 {
		t.Errorf("%d rows, want one per person", n)
	}
	if strings.Contains(page, "account:write") || strings.Contains(page, a.grantID) {
		t.Error("the people page of one application shows another's grant, or a grant id")
	}

	csrf := f.adminCSRF()
	disconnect := func(person string, form url.Values, hdr map[string]string) int {
		form.Set("csrf_token", csrf)
		return f.adminPost(adminPathDisconnect, person, form, hdr).Code
	}
	for _, tc := range []struct {
		name   string
		person string
		form   url.Values
		hdr    map[string]string
		status int
	}{
		{"a member", "student", url.Values{"client_id": {memberClient}, "subject": {"member-2"}}, nil, http.StatusForbidden},
		{"a person not connected", "owner", url.Values{"client_id": {memberClient}, "subject": {"member-9"}}, nil, http.StatusNotFound},
		{"an unknown application", "owner", url.Values{"client_id": {"forged"}, "subject": {"member-2"}}, nil, http.StatusNotFound},
		{"no person", "owner", url.Values{"client_id": {memberClient}}, nil, http.StatusBadRequest},
		{"neither grant nor application", "owner", url.Values{"subject": {"member-2"}}, nil, http.StatusBadRequest},
		{"both a grant and an application", "owner", url.Values{"grant_id": {b.grantID}, "client_id": {memberClient},
			"subject": {"member-2"}}, nil, http.StatusBadRequest},
		{"a grant of another person", "owner", url.Values{"grant_id": {b.grantID}, "subject": {"member-1"}}, nil, http.StatusNotFound},
		{"a forged grant", "owner", url.Values{"grant_id": {"forged"}, "subject": {"member-2"}}, nil, http.StatusNotFound},
		{"cross-site", "owner", url.Values{"client_id": {memberClient}, "subject": {"member-2"}}, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
	} {
		if got := disconnect(tc.person, tc.form, tc.hdr); got != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.status)
		}
	}
	for _, g := range []issued{a, a2, b, c} {
		if _, err := f.srv.LookupAccessToken(context.Background(), g.access); err != nil {
			t.Fatalf("a refused disconnect ended a grant: %v", err)
		}
	}
	// The people page's button: both of the student's grants end.
	post := func(form url.Values) (int, string) {
		form.Set("csrf_token", csrf)
		rec := f.adminPost(adminPathDisconnect, "owner", form, nil)
		return rec.Code, rec.Header().Get("Location")
	}
	if code, loc := post(url.Values{"client_id": {memberClient}, "subject": {"member-1"}}); code != http.StatusSeeOther ||
		!strings.Contains(loc, "done=disconnected") || !strings.Contains(loc, "client_id="+memberClient) {
		t.Errorf("disconnect = %d %q", code, loc)
	}
	for i, g := range []issued{a, a2} {
		if _, err := f.srv.LookupAccessToken(context.Background(), g.access); !errors.Is(err, authserver.ErrInvalidToken) {
			t.Errorf("the disconnected person's grant %d: %v", i+1, err)
		}
	}
	for _, g := range []issued{b, c} {
		if _, err := f.srv.LookupAccessToken(context.Background(), g.access); err != nil {
			t.Errorf("another grant ended: %v", err)
		}
	}
	if code, _ := post(url.Values{"client_id": {memberClient}, "subject": {"member-1"}}); code != http.StatusNotFound {
		t.Errorf("the same again = %d, want 404: nothing is left", code)
	}
	rec = f.adminGet(adminPathPeople+"?client_id="+memberClient+"&done=disconnected", "owner")
	if !strings.Contains(rec.Body.String(), `id="people-count">1<`) || !strings.Contains(rec.Body.String(), "on every device") {
		t.Errorf("after the disconnect:\n%s", rec.Body)
	}
	// One grant by its id: ended, then found ended already.
	for i, done := range []string{"disconnected", "already"} {
		if code, loc := post(url.Values{"grant_id": {b.grantID}, "subject": {"member-2"}}); code != http.StatusSeeOther ||
			!strings.Contains(loc, "done="+done) || !strings.Contains(loc, "client_id="+memberClient) {
			t.Errorf("grant disconnect %d = %d %q, want done=%s", i+1, code, loc, done)
		}
	}
	if _, err := f.srv.LookupAccessToken(context.Background(), b.access); !errors.Is(err, authserver.ErrInvalidToken) {
		t.Errorf("the disconnected grant: %v", err)
	}
	for _, tc := range []struct {
		target string
		status int
	}{
		{adminPathPeople, http.StatusNotFound},
		{adminPathPeople + "?client_id=unknown", http.StatusNotFound},
		{adminPathPeople + "?client_id=" + memberClient + "&after=!!", http.StatusBadRequest},
		{adminPathPeople + "?client_id=" + confidential, http.StatusOK},
	} {
		if rec := f.adminGet(tc.target, "owner"); rec.Code != tc.status {
			t.Errorf("GET %s = %d, want %d", tc.target, rec.Code, tc.status)
		}
	}
	if rec := f.adminGet(adminPathPeople+"?client_id="+memberClient, "student"); rec.Code != http.StatusForbidden {
		t.Errorf("a member opened the people page: %d", rec.Code)
	}
}

func TestAdminConnectedPeopleStoreDown(t *testing.T) {
	f, fs := failingFixture(t)
	g := f.grantTo(memberClient, "student", "openid")
	csrf := f.adminCSRF()
	for _, c := range []struct {
		name, method, target string
		fail                 string
	}{
		{"overview counts", "GET", theAdminPaths.Overview, "GrantCounts"},
		{"people list", "GET", adminPathPeople + "?client_id=" + memberClient, "ListConnections"},
		{"disconnect", "POST", adminPathDisconnect, "DisconnectClient"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs.Fail(c.fail)
			defer fs.Fail("none")
			rec := f.adminGet(c.target, "owner")
			if c.method == "POST" {
				rec = f.adminPost(c.target, "owner", url.Values{"client_id": {memberClient}, "subject": {"member-1"}, "csrf_token": {csrf}}, nil)
			}
			if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
				t.Errorf("= %d\n%s", rec.Code, rec.Body)
			}
		})
	}
	if _, err := f.srv.LookupAccessToken(context.Background(), g.access); err != nil {
		t.Errorf("the grant after the failures: %v", err)
	}
}

// disconnects records what the server counts as disconnects.
type disconnects struct {
	mu  sync.Mutex
	got []string
}

func (*disconnects) TokenIssued(string)     {}
func (*disconnects) Refused(string, string) {}
func (*disconnects) Registered(string)      {}
func (*disconnects) TokenLookup(bool)       {}

func (d *disconnects) GrantDisconnected(by string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, by)
}

// Every grant ended at someone's request is counted once, by who: a
// disconnect of an application counts each of its grants.
func TestDisconnectMetric(t *testing.T) {
	revoke := func(f *fixture, token, client string) {
		form := url.Values{"token": {token}, "client_id": {client}}
		f.serve("POST", sitepath.Revoke, strings.NewReader(form.Encode()),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	}
	for _, c := range []struct {
		name string
		end  func(f *fixture, g issued)
		want []string
	}{
		{"member", func(f *fixture, g issued) {
			csrf := f.accountCSRF("student")
			f.disconnectForm("student", memberClient, csrf, nil)
			f.disconnectForm("student", memberClient, csrf, nil) // nothing left: not again
		}, []string{authserver.DisconnectedByMember}},
		{"member, two devices", func(f *fixture, g issued) {
			f.grantTo(memberClient, "student", "openid")
			f.disconnectForm("student", memberClient, f.accountCSRF("student"), nil)
		}, []string{authserver.DisconnectedByMember, authserver.DisconnectedByMember}},
		{"operator", func(f *fixture, g issued) {
			f.adminPost(adminPathDisconnect, "owner", url.Values{"client_id": {memberClient}, "subject": {"member-1"},
				"csrf_token": {f.adminCSRF()}}, nil)
		}, []string{authserver.DisconnectedByOperator}},
		{"operator, one grant", func(f *fixture, g issued) {
			for range 2 {
				f.adminPost(adminPathDisconnect, "owner", url.Values{"grant_id": {g.grantID}, "subject": {"member-1"},
					"csrf_token": {f.adminCSRF()}}, nil)
			}
		}, []string{authserver.DisconnectedByOperator}},
		{"client revokes its refresh token", func(f *fixture, g issued) {
			revoke(f, g.refresh, memberClient)
			revoke(f, g.refresh, memberClient)
		}, []string{authserver.DisconnectedByClient}},
		{"client revokes an access token", func(f *fixture, g issued) { revoke(f, g.access, memberClient) }, nil},
		{"another client's token", func(f *fixture, g issued) { revoke(f, g.refresh, confidential) }, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &disconnects{}
			f := newFixtureWith(t, func(c *authserver.Config) { c.Observer = d })
			g := f.grantTo(memberClient, "student", "openid")
			c.end(f, g)
			if !slices.Equal(d.got, c.want) {
				t.Errorf("counted %v, want %v", d.got, c.want)
			}
		})
	}
}
