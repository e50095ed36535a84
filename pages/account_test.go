package pages

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// issued is a grant made for a test, with its raw tokens.
type issued struct {
	grantID, access, refresh string
}

// grantTo stores a grant of person to clientID as a redeemed code would,
// with untimed tokens (which the server keeps under their hash alone),
// and the consent the person gave.
func (f *fixture) grantTo(clientID, person string, scopes ...string) issued {
	f.t.Helper()
	ctx := context.Background()
	id := people[person]
	c, err := f.srv.KnownClient(ctx, clientID)
	if err != nil || c == nil {
		f.t.Fatalf("no client %s: %v", clientID, err)
	}
	now := f.clock.Now()
	code := randomString()
	err = f.store.PutCode(ctx, hashToken(code), &store.Code{Request: store.AuthRequest{ClientID: clientID,
		Scopes: scopes, Audience: c.Audience, Resource: issuer}, Identity: id, AuthTime: now, ExpiresAt: now.Add(authserver.DefaultCodeTTL)})
	if err != nil {
		f.t.Fatal(err)
	}
	var out issued
	err = f.store.RedeemCode(ctx, hashToken(code), func(code *store.Code) (*store.Grant, []store.IssuedToken, error) {
		g := &store.Grant{ID: randomString(), ClientID: clientID, Audience: c.Audience, Scopes: scopes,
			Resource: issuer, Identity: id, AuthTime: now, CreatedAt: now}
		out = issued{grantID: g.ID, access: "sgat_" + randomString(), refresh: "sgrt_" + randomString()}
		return g, []store.IssuedToken{
			{Hash: hashToken(out.access), Token: &store.Token{Kind: store.TokenAccess, GrantID: g.ID, ClientID: clientID,
				Scopes: scopes, IssuedAt: now, ExpiresAt: now.Add(authserver.DefaultAccessTTL)}},
			{Hash: hashToken(out.refresh), Token: &store.Token{Kind: store.TokenRefresh, GrantID: g.ID, ClientID: clientID,
				Scopes: scopes, IssuedAt: now, ExpiresAt: now.Add(authserver.DefaultRefreshTTL)}},
		}, nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	granted := scopes
	if prev, err := f.store.GetConsent(ctx, clientID, id.Subject); err == nil {
		granted = append(slices.Clone(prev.Scopes), scopes...)
		slices.Sort(granted)
		granted = slices.Compact(granted)
	}
	if err := f.store.PutConsent(ctx, clientID, id.Subject, &store.Consent{Scopes: granted, GrantedAt: now}); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// storedClients adds a client of each stored kind to the fixture.
func (f *fixture) storedClients() {
	f.t.Helper()
	for _, c := range []*store.Client{
		{ID: "app_planner", Name: "Study Planner", Kind: store.KindApp, Audience: store.AudienceMember, Scopes: authserver.DefaultMemberScopes, AuthMethod: "none"},
		{ID: "https://agent.example/client.json", Name: "Doc Agent", Kind: store.KindMetadata, Audience: store.AudienceMember, Scopes: authserver.DefaultMemberScopes, AuthMethod: "none"},
		{ID: "sgc_cli", Name: "school-cli", Kind: store.KindLoopback, Audience: store.AudienceOperator, Scopes: authserver.OperatorScopes(), AuthMethod: "none"},
	} {
		if err := f.store.PutClient(context.Background(), c); err != nil {
			f.t.Fatal(err)
		}
	}
}

var (
	reGrantRow  = regexp.MustCompile(`(?s)<tr class="grant" data-client-id="([^"]+)">(.*?)</tr>`)
	reRowClient = regexp.MustCompile(`name="client_id" value="([^"]+)"`)
	reKind      = regexp.MustCompile(`class="muted app-kind">([^<]+)<`)
)

// accountPage returns the person's page and the rows it lists, by
// client id. Each row's Disconnect form must name the row's client.
func (f *fixture) accountPage(person, query string) (string, map[string]string) {
	f.t.Helper()
	rec := f.adminGet(sitepath.AccountApplications+query, person)
	if rec.Code != http.StatusOK {
		f.t.Fatalf("applications page: %d\n%s", rec.Code, rec.Body)
	}
	checkPageHeaders(f.t.(*testing.T), rec)
	rows := map[string]string{}
	for _, m := range reGrantRow.FindAllStringSubmatch(rec.Body.String(), -1) {
		id := htmlUnescape(m[1])
		if _, twice := rows[id]; twice {
			f.t.Errorf("%s is listed twice", id)
		}
		if form := reRowClient.FindStringSubmatch(m[2]); form == nil || htmlUnescape(form[1]) != id {
			f.t.Errorf("the row of %s has the form %v", id, form)
		}
		rows[id] = htmlUnescape(m[2])
	}
	return rec.Body.String(), rows
}

// disconnectForm posts the confirmation of an application's disconnect.
func (f *fixture) disconnectForm(person, clientID, csrf string, hdr map[string]string) *http.Response {
	f.t.Helper()
	rec := f.adminPost(accountPathDisconnect, person, confirmed(clientID, csrf), hdr)
	return rec.Result()
}

// confirmed is the form of the confirmation's Disconnect submit.
func confirmed(clientID, csrf string) url.Values {
	return url.Values{"client_id": {clientID}, "csrf_token": {csrf}, "confirm": {"yes"}}
}

func (f *fixture) accountCSRF(person string) string {
	f.t.Helper()
	page, _ := f.accountPage(person, "")
	m := reCSRF.FindStringSubmatch(page)
	if m == nil {
		f.t.Fatalf("no form on the page of %s:\n%s", person, page)
	}
	return m[1]
}

// Each kind of client is listed once, however many times the person
// allowed it, with its name, its kind in words, its scopes in the consent
// page's words and how many devices, and disconnects alike: every grant's
// tokens stop working and its consent is forgotten; the other
// application's grant lives on.
func TestAccountListsAndDisconnectsEachKind(t *testing.T) {
	for _, c := range []struct {
		kind, clientID, person, name, words string
		scopes                              []string
		summary                             string
	}{
		{store.KindVendor, memberClient, "student", "Member App", "Integration set up by the school", []string{"openid", "account:read"},
			"Can read your courses, progress and orders"},
		{store.KindApp, "app_planner", "student", "Study Planner", "Member application", []string{"openid", "account:read", "account:write"},
			"Can read and change your courses, orders and registrations"},
		{store.KindMetadata, "https://agent.example/client.json", "student", "Doc Agent", "Application published at agent.example", []string{"openid", "account:read"},
			"Can read your courses, progress and orders"},
		{store.KindLoopback, "sgc_cli", "owner", "school-cli", "Command-line or desktop app on a computer", []string{"openid", "courses:read"},
			"Can read the school's data"},
	} {
		t.Run(c.kind, func(t *testing.T) {
			f := newFixture(t)
			f.storedClients()
			g := f.grantTo(c.clientID, c.person, c.scopes...)
			f.clock.Advance(30 * time.Minute)
			// Another device, allowed fewer scopes: still one row.
			g2 := f.grantTo(c.clientID, c.person, "openid")
			other := f.grantTo(confidential, c.person, "openid")
			page, rows := f.accountPage(c.person, "")
			if len(rows) != 2 || rows[c.clientID] == "" || rows[confidential] == "" {
				t.Fatalf("rows = %v; want one per application\n%s", rows, page)
			}
			for _, want := range []string{c.name, c.words, "Connected on 2 devices",
				`class="since"><time datetime="2026-11-23T10:00:00Z" title="23 November 2026, 10:00 UTC">`,
				`class="last-used"><time datetime="2026-11-23T10:30:00Z" title="23 November 2026, 10:30 UTC">just now</time>`} {
				if !strings.Contains(rows[c.clientID], want) {
					t.Errorf("the row lacks %q:\n%s", want, rows[c.clientID])
				}
			}
			if strings.Contains(rows[confidential], "devices") {
				t.Errorf("an application allowed once says devices:\n%s", rows[confidential])
			}
			// Words before codes: a line of summary, then every scope's
			// meaning with its code after it, behind a details element.
			summary, all, _ := strings.Cut(rows[c.clientID], `<details class="all-scopes">`)
			if !strings.Contains(summary, `<span class="summary">`+c.summary+`</span>`) {
				t.Errorf("the row's summary is not %q:\n%s", c.summary, rows[c.clientID])
			}
			for _, sc := range c.scopes {
				line := `<li><span class="scope-words">` + scopeWords("en", sc) + `</span> <code class="scope-code">` + sc + `</code></li>`
				if !strings.Contains(all, line) || strings.Contains(summary, sc) {
					t.Errorf("scope %s is not shown in words, then its code, behind the details:\n%s", sc, rows[c.clientID])
				}
			}
			for i, g := range []issued{g, g2} {
				if _, err := f.srv.LookupAccessToken(context.Background(), g.access); err != nil {
					t.Fatalf("device %d's access token before the disconnect: %v", i+1, err)
				}
			}
			res := f.disconnectForm(c.person, c.clientID, f.accountCSRF(c.person), nil)
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != sitepath.AccountApplications+"?done=disconnected" {
				t.Fatalf("disconnect = %d %q", res.StatusCode, res.Header.Get("Location"))
			}
			for i, g := range []issued{g, g2} {
				if _, err := f.srv.LookupAccessToken(context.Background(), g.access); !errors.Is(err, authserver.ErrInvalidToken) {
					t.Errorf("device %d's access token: %v", i+1, err)
				}
			}
			if _, err := f.srv.LookupAccessToken(context.Background(), other.access); err != nil {
				t.Errorf("the other grant's access token: %v", err)
			}
			if _, err := f.store.GetConsent(context.Background(), c.clientID, people[c.person].Subject); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the consent was kept: %v", err)
			}
			page, rows = f.accountPage(c.person, "?done=disconnected")
			if _, ok := rows[c.clientID]; ok || len(rows) != 1 || !strings.Contains(page, "on every device") {
				t.Errorf("after the disconnect: rows %v\n%s", rows, page)
			}
		})
	}
}

// The whole way, authorized twice (two devices): one row, which shows the
// latest use; its Disconnect refuses both access tokens at the next
// request and both refresh tokens with invalid_grant, and the next
// authorization shows the consent page again.
func TestAccountDisconnectEndsTheFlow(t *testing.T) {
	f := newFixture(t)
	first := f.tokens()
	f.clock.Advance(30 * time.Minute)
	second := f.tokens()
	// A refresh of the first device's tokens is the latest use.
	f.clock.Advance(30 * time.Minute)
	status, m := f.token(refreshForm(first["refresh_token"].(string)))
	if status != http.StatusOK {
		t.Fatalf("refresh: %d %v", status, m)
	}
	first = m
	for _, toks := range []map[string]any{first, second} {
		if _, err := f.srv.LookupAccessToken(context.Background(), toks["access_token"].(string)); err != nil {
			t.Fatal(err)
		}
	}
	_, rows := f.accountPage("student", "")
	row := rows[memberClient]
	for _, want := range []string{"Connected on 2 devices",
		`class="since"><time datetime="2026-11-23T10:00:00Z" title="23 November 2026, 10:00 UTC">1 hour ago</time>`,
		`class="last-used"><time datetime="2026-11-23T11:00:00Z" title="23 November 2026, 11:00 UTC">just now</time>`} {
		if !strings.Contains(row, want) || len(rows) != 1 {
			t.Errorf("the row lacks %q (rows %v)", want, rows)
		}
	}
	// Approved before, with a redirect that proves the client: no page.
	_, ch := pkce()
	if rec := f.authorize(authParams(ch), "student"); rec.Code != http.StatusFound {
		t.Fatalf("before the disconnect, authorize = %d, want a redirect", rec.Code)
	}
	res := f.disconnectForm("student", memberClient, f.accountCSRF("student"), nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("disconnect = %d", res.StatusCode)
	}
	for i, toks := range []map[string]any{first, second} {
		if _, err := f.srv.LookupAccessToken(context.Background(), toks["access_token"].(string)); !errors.Is(err, authserver.ErrInvalidToken) {
			t.Errorf("device %d's access token after the disconnect: %v", i+1, err)
		}
		if status, m := f.token(refreshForm(toks["refresh_token"].(string))); status != http.StatusBadRequest || m["error"] != "invalid_grant" {
			t.Errorf("device %d's refresh after the disconnect: %d %v", i+1, status, m)
		}
	}
	if rec := f.authorize(authParams(ch), "student"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `id="approve"`) {
		t.Errorf("after the disconnect, authorize = %d, want the consent page", rec.Code)
	}
}

// Bad input and abuse change nothing and get a clear page.
func TestAccountRefusals(t *testing.T) {
	f := newFixture(t)
	f.storedClients()
	mine := f.grantTo("app_planner", "student", "openid", "account:read")
	theirs := f.grantTo("app_planner", "student2", "openid", "account:read")
	ops := f.grantTo("sgc_cli", "owner", "openid", "courses:read")
	csrf := f.accountCSRF("student")
	otherCSRF := f.accountCSRF("student2")
	for _, c := range []struct {
		name, person, clientID, csrf string
		hdr                          map[string]string
		status                       int
		says                         string
	}{
		{"an application only another person connected", "student", "sgc_cli", csrf, nil, http.StatusNotFound, "Nothing was changed"},
		{"forged client id", "student", "forged", csrf, nil, http.StatusNotFound, "Nothing was changed"},
		{"a prefix of the client id", "student", "app_plan", csrf, nil, http.StatusNotFound, "Nothing was changed"},
		{"no client id", "student", "", csrf, nil, http.StatusNotFound, "Nothing was changed"},
		{"another person's form", "student", "app_planner", otherCSRF, nil, http.StatusForbidden, "not issued to you"},
		{"no token", "student", "app_planner", "", nil, http.StatusForbidden, "not issued to you"},
		{"an admin form's token", "student", "app_planner", f.adminCSRF(), nil, http.StatusForbidden, "not issued to you"},
		{"cross-site origin", "student", "app_planner", csrf, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden, "another site"},
		{"cross-site fetch", "student", "app_planner", csrf, map[string]string{"Origin": "", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, "another site"},
		{"the other person with my form", "student2", "app_planner", csrf, nil, http.StatusForbidden, "not issued to you"},
		{"the other person with their form, naming another's application", "student2", "sgc_cli", otherCSRF, nil, http.StatusNotFound, "Nothing was changed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := f.adminPost(accountPathDisconnect, c.person, confirmed(c.clientID, c.csrf), c.hdr)
			if rec.Code != c.status || !strings.Contains(htmlUnescape(rec.Body.String()), c.says) {
				t.Errorf("= %d, want %d saying %q\n%s", rec.Code, c.status, c.says, rec.Body)
			}
			checkPageHeaders(t, rec)
		})
	}
	for _, g := range []issued{mine, theirs, ops} {
		if _, err := f.srv.LookupAccessToken(context.Background(), g.access); err != nil {
			t.Errorf("a refused form revoked a grant: %v", err)
		}
	}
	// Replayed: the first disconnects; the second finds nothing left of
	// it (no grant, no consent) and changes nothing.
	if res := f.disconnectForm("student", "app_planner", csrf, nil); res.StatusCode != http.StatusSeeOther ||
		res.Header.Get("Location") != sitepath.AccountApplications+"?done=disconnected" {
		t.Errorf("first submission = %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	if res := f.disconnectForm("student", "app_planner", csrf, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("second submission = %d", res.StatusCode)
	}
	if _, err := f.srv.LookupAccessToken(context.Background(), theirs.access); err != nil {
		t.Errorf("the other person's grant of the same application: %v", err)
	}
	// An application that ended its own grant (revoking its refresh
	// token) left the consent: disconnecting forgets it, and says the
	// access had ended already.
	f.grantTo(confidential, "student", "openid")
	ended := f.grantTo(memberClient, "student", "openid")
	if err := f.store.RevokeToken(context.Background(), hashToken(ended.refresh)); err != nil {
		t.Fatal(err)
	}
	if res := f.disconnectForm("student", memberClient, csrf, nil); res.Header.Get("Location") != sitepath.AccountApplications+"?done=already" {
		t.Errorf("disconnecting a consent alone = %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	if _, err := f.store.GetConsent(context.Background(), memberClient, people["student"].Subject); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the consent was kept: %v", err)
	}
	// A member never sees another's grants, nor, without an operator
	// role, grants that act as an operator; the operator sees their own.
	f.grantTo("sgc_cli", "student2", "openid")
	if _, rows := f.accountPage("student2", ""); len(rows) != 1 || rows["app_planner"] == "" {
		t.Errorf("student2 sees %v", rows)
	}
	if _, rows := f.accountPage("owner", ""); len(rows) != 1 || rows["sgc_cli"] == "" {
		t.Errorf("the owner sees %v", rows)
	}
}

func TestAccountPageStates(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		name, method, target, person string
		status                       int
		says, location               string
	}{
		{"not signed in", "GET", sitepath.AccountApplications, "", http.StatusSeeOther, "",
			issuer + "/login?return_to=" + url.QueryEscape(issuer+sitepath.AccountApplications)},
		{"not signed in, posting", "POST", accountPathDisconnect, "", http.StatusSeeOther, "",
			issuer + "/login?return_to=" + url.QueryEscape(issuer+sitepath.AccountApplications)},
		{"empty", "GET", sitepath.AccountApplications, "student", http.StatusOK, "You have not connected any application", ""},
		{"bad cursor", "GET", sitepath.AccountApplications + "?after=!!!", "student", http.StatusBadRequest, "not valid", ""},
		{"forged cursor", "GET", sitepath.AccountApplications + "?after=bm90LWEtY3Vyc29y", "student", http.StatusBadRequest, "not valid", ""},
		{"unknown page", "GET", sitepath.AccountPages + "/other", "student", http.StatusNotFound, "no such page", ""},
		{"the area itself", "GET", sitepath.AccountPages, "student", http.StatusNotFound, "no such page", ""},
		{"posting the page", "POST", sitepath.AccountApplications, "student", http.StatusMethodNotAllowed, "only be viewed", ""},
		{"getting the form", "GET", accountPathDisconnect, "student", http.StatusMethodNotAllowed, "Disconnect button", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var rec = f.adminGet(c.target, c.person)
			if c.method == "POST" {
				rec = f.adminPost(c.target, c.person, url.Values{}, nil)
			}
			if rec.Code != c.status || !strings.Contains(htmlUnescape(rec.Body.String()), c.says) ||
				(c.location != "" && rec.Header().Get("Location") != c.location) {
				t.Errorf("= %d %q, want %d %q saying %q\n%s", rec.Code, rec.Header().Get("Location"), c.status, c.location, c.says, rec.Body)
			}
			checkPageHeaders(t, rec)
		})
	}
}

// A person who authorized one tool 600 times, and more applications
// than a page holds, sees the tool once and every other application, a
// page of applications at a time.
func TestAccountPages(t *testing.T) {
	f := newFixture(t)
	f.storedClients()
	start := f.clock.Now()
	student := people["student"]
	var want []string
	var grants []*store.Grant
	put := func(clientID string, i int) {
		grants = append(grants, &store.Grant{ID: randomString(), ClientID: clientID, Audience: store.AudienceMember,
			Scopes: []string{"openid"}, Identity: student, CreatedAt: start.Add(time.Duration(i) * time.Second)})
	}
	for i := range 600 {
		put("sgc_cli", i)
	}
	want = append(want, "sgc_cli")
	for i := range authserver.DefaultGrantPage + 2 {
		id := fmt.Sprintf("app_%03d", i)
		want = append(want, id)
		put(id, 600+i)
	}
	err := boltstore.Fill(f.store, nil, grants)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	query := ""
	for pages := 0; pages < 5; pages++ {
		page, rows := f.accountPage("student", query)
		for _, m := range reGrantRow.FindAllStringSubmatch(page, -1) {
			got = append(got, htmlUnescape(m[1]))
		}
		if row, ok := rows["sgc_cli"]; ok && !strings.Contains(row, "Connected on 600 devices") {
			t.Errorf("the tool's row:\n%s", row)
		}
		next := regexp.MustCompile(`href="[^"?]*(\?after=[^"]+)" id="next-page"`).FindStringSubmatch(page)
		if next == nil {
			break
		}
		query = htmlUnescape(next[1])
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("paged: %d applications listed, want %d, each once, in order\n%v", len(got), len(want), got)
	}
}

// A store that fails leaves every grant as it was and says so.
func TestAccountStoreDown(t *testing.T) {
	f, fs := failingFixture(t)
	g := f.grantTo(memberClient, "student", "openid")
	csrf := f.accountCSRF("student")
	for _, c := range []struct {
		name, method string
		fail         []string
	}{
		{"page", "GET", []string{"ListConnections"}},
		{"page, naming the clients", "GET", []string{"GetClient"}},
		{"disconnect", "POST", []string{"DisconnectClient"}},
		{"CSRF key", "POST", []string{"GetSetting"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs.Fail(c.fail...)
			defer fs.Fail("none")
			rec := f.adminGet(sitepath.AccountApplications, "student")
			if c.method == "POST" {
				rec = f.adminPost(accountPathDisconnect, "student", confirmed(memberClient, csrf), nil)
			}
			if c.name == "page, naming the clients" {
				// Vendors are named without the store.
				if rec.Code != http.StatusOK {
					t.Errorf("= %d", rec.Code)
				}
				return
			}
			if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
				!strings.Contains(rec.Body.String(), "Nothing was changed") {
				t.Errorf("= %d\n%s", rec.Code, rec.Body)
			}
		})
	}
	if _, err := f.srv.LookupAccessToken(context.Background(), g.access); err != nil {
		t.Errorf("the grant after the failures: %v", err)
	}
}

var reConfirmForm = regexp.MustCompile(`(?s)<form method="post" action="([^"]+)">(.*?)</form>`)

// The list's Disconnect button leads to a confirmation that names the
// application and what it loses and changes nothing; only its own submit
// disconnects. Asking for it is checked like the disconnect itself.
func TestAccountDisconnectAsksFirst(t *testing.T) {
	f := newFixture(t)
	f.storedClients()
	g := f.grantTo("app_planner", "student", "openid", "account:read")
	f.grantTo("app_planner", "student2", "openid")
	csrf := f.accountCSRF("student")
	ask := url.Values{"client_id": {"app_planner"}, "csrf_token": {csrf}}
	rec := f.adminPost(accountPathDisconnect, "student", ask, nil)
	body := htmlUnescape(rec.Body.String())
	if rec.Code != http.StatusOK || !strings.Contains(body, "Disconnect Study Planner?") ||
		!strings.Contains(body, "on every device") || !strings.Contains(body, `id="cancel" href="`+sitepath.AccountApplications+`"`) {
		t.Fatalf("the confirmation = %d\n%s", rec.Code, body)
	}
	// What it loses, in words first: the scopes this person allowed it.
	for _, want := range []string{"It will no longer be able to:",
		`<li><span class="scope-words">` + scopeWords("en", "account:read") + `</span> <code class="scope-code">account:read</code></li>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the confirmation lacks %q\n%s", want, body)
		}
	}
	checkPageHeaders(t, rec)
	if _, err := f.srv.LookupAccessToken(context.Background(), g.access); err != nil {
		t.Fatalf("asking for the confirmation disconnected: %v", err)
	}
	form := reConfirmForm.FindStringSubmatch(rec.Body.String())
	if form == nil || form[1] != accountPathDisconnect {
		t.Fatalf("the confirmation's form: %v", form)
	}
	vals := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(form[2], -1) {
		vals.Set(m[1], htmlUnescape(m[2]))
	}
	if vals.Get("confirm") != "yes" || vals.Get("client_id") != "app_planner" || vals.Get("csrf_token") == "" {
		t.Fatalf("the confirmation's fields: %v", vals)
	}
	// The confirmation in German.
	de := f.adminPost(accountPathDisconnect, "student", ask, map[string]string{"Accept-Language": "de"})
	if de.Code != http.StatusOK || !strings.Contains(htmlUnescape(de.Body.String()), "Study Planner trennen?") {
		t.Errorf("the German confirmation = %d\n%s", de.Code, de.Body)
	}
	// Only an application of the person's own list is named: one they
	// never connected (another person's, or one known but never allowed)
	// is the error page in their language, as its submit would be, and so
	// is one whose grants all act as an operator, which a member's list
	// does not show.
	f.grantTo("https://agent.example/client.json", "student2", "openid")
	f.grantTo("sgc_cli", "student2", "openid")
	for _, other := range []string{"https://agent.example/client.json", "sgc_cli"} {
		rec := f.adminPost(accountPathDisconnect, "student", url.Values{"client_id": {other}, "csrf_token": {csrf}},
			map[string]string{"Accept-Language": "de"})
		body := htmlUnescape(rec.Body.String())
		if rec.Code != http.StatusNotFound || strings.Contains(body, "Doc Agent") || strings.Contains(body, "school-cli") ||
			!strings.Contains(body, "Keine Ihrer verbundenen Anwendungen") || !strings.Contains(body, `<html lang="de"`) {
			t.Errorf("the confirmation of %s, never connected = %d\n%s", other, rec.Code, body)
		}
	}
	if rec := f.adminPost(accountPathDisconnect, "student2", url.Values{"client_id": {"sgc_cli"}, "csrf_token": {f.accountCSRF("student2")}}, nil); rec.Code != http.StatusNotFound {
		t.Errorf("the confirmation of an operator's grant to a member = %d\n%s", rec.Code, rec.Body)
	}
	for _, c := range []struct {
		name   string
		form   url.Values
		hdr    map[string]string
		status int
	}{
		{"no token", url.Values{"client_id": {"app_planner"}}, nil, http.StatusForbidden},
		{"a forged token", url.Values{"client_id": {"app_planner"}, "csrf_token": {"forged"}}, nil, http.StatusForbidden},
		{"another person's token", url.Values{"client_id": {"app_planner"}, "csrf_token": {f.accountCSRF("student2")}}, nil, http.StatusForbidden},
		{"cross-site", ask, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"an unknown application", url.Values{"client_id": {"forged"}, "csrf_token": {csrf}}, nil, http.StatusNotFound},
		{"a confirm other than yes", url.Values{"client_id": {"app_planner"}, "csrf_token": {csrf}, "confirm": {"1"}}, nil, http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := f.adminPost(accountPathDisconnect, "student", c.form, c.hdr)
			if rec.Code != c.status {
				t.Errorf("= %d, want %d\n%s", rec.Code, c.status, rec.Body)
			}
			if _, err := f.srv.LookupAccessToken(context.Background(), g.access); err != nil {
				t.Fatalf("the grant after it: %v", err)
			}
		})
	}
	res := f.adminPost(accountPathDisconnect, "student", vals, nil)
	if res.Code != http.StatusSeeOther || res.Header().Get("Location") != sitepath.AccountApplications+"?done=disconnected" {
		t.Fatalf("the confirmation's submit = %d %q", res.Code, res.Header().Get("Location"))
	}
	if _, err := f.srv.LookupAccessToken(context.Background(), g.access); err == nil {
		t.Error("the grant outlived the confirmed disconnect")
	}
}
