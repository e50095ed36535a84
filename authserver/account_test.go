package authserver

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/sitepath"
)

// issued is a grant made for a test, with its raw tokens.
type issued struct {
	grantID, access, refresh string
}

// grantTo stores a grant of person to clientID as a redeemed code would,
// and the consent the person gave.
func (f *fixture) grantTo(clientID, person string, scopes ...string) issued {
	f.t.Helper()
	id := people[person]
	c, ok := f.srv.vendors[clientID]
	if !ok {
		var err error
		if c, err = f.store.GetClient(context.Background(), clientID); err != nil {
			f.t.Fatal(err)
		}
	}
	now := f.clock.Now()
	code := randomString()
	err := f.store.PutCode(context.Background(), hashToken(code), &Code{Request: AuthRequest{ClientID: clientID,
		Scopes: scopes, Audience: c.Audience, Resource: issuer}, Identity: id, AuthTime: now, ExpiresAt: now.Add(DefaultCodeTTL)})
	if err != nil {
		f.t.Fatal(err)
	}
	var out issued
	err = f.store.RedeemCode(context.Background(), hashToken(code), func(code *Code) (*Grant, []IssuedToken, error) {
		g := &Grant{ID: randomString(), ClientID: clientID, Audience: c.Audience, Scopes: scopes,
			Resource: issuer, Identity: id, AuthTime: now, CreatedAt: now}
		resp, toks := f.srv.mintTokens(g, scopes, now)
		out = issued{grantID: g.ID, access: resp.AccessToken, refresh: resp.RefreshToken}
		return g, toks, nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.srv.rememberConsent(context.Background(), clientID, id.Subject, scopes)
	return out
}

// storedClients adds a client of each stored kind to the fixture.
func (f *fixture) storedClients() {
	f.t.Helper()
	for _, c := range []*Client{
		{ID: "app_planner", Name: "Study Planner", Kind: KindApp, Audience: AudienceMember, Scopes: DefaultMemberScopes, AuthMethod: "none"},
		{ID: "https://agent.example/client.json", Name: "Doc Agent", Kind: KindMetadata, Audience: AudienceMember, Scopes: DefaultMemberScopes, AuthMethod: "none"},
		{ID: "sgc_cli", Name: "school-cli", Kind: KindLoopback, Audience: AudienceOperator, Scopes: OperatorScopes(), AuthMethod: "none"},
	} {
		if err := f.store.PutClient(context.Background(), c); err != nil {
			f.t.Fatal(err)
		}
	}
}

var (
	reGrantRow = regexp.MustCompile(`(?s)<tr class="grant" data-client-id="([^"]+)">.*?name="grant_id" value="([^"]+)"`)
	reKind     = regexp.MustCompile(`class="muted app-kind">([^<]+)<`)
)

// accountPage returns the person's page and the rows it lists, by
// client id, with their grant ids.
func (f *fixture) accountPage(person, query string) (string, map[string]string) {
	f.t.Helper()
	rec := f.adminGet(sitepath.AccountApplications+query, person)
	if rec.Code != http.StatusOK {
		f.t.Fatalf("applications page: %d\n%s", rec.Code, rec.Body)
	}
	checkPageHeaders(f.t.(*testing.T), rec)
	rows := map[string]string{}
	for _, m := range reGrantRow.FindAllStringSubmatch(rec.Body.String(), -1) {
		rows[htmlUnescape(m[1])] = m[2]
	}
	return rec.Body.String(), rows
}

// disconnectForm posts the Disconnect form of a grant.
func (f *fixture) disconnectForm(person, grantID, csrf string, hdr map[string]string) *http.Response {
	f.t.Helper()
	rec := f.adminPost(accountPathDisconnect, person, url.Values{"grant_id": {grantID}, "csrf_token": {csrf}}, hdr)
	return rec.Result()
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

// Each kind of client is listed with its name, its kind in words and its
// scopes in the consent page's words, and disconnects alike: its tokens
// stop working and its consent is forgotten; the other grants live on.
func TestAccountListsAndDisconnectsEachKind(t *testing.T) {
	for _, c := range []struct {
		kind, clientID, person, name, words string
		scopes                              []string
	}{
		{KindVendor, memberClient, "student", "Member App", "Integration set up by the school", []string{"openid", "account:read"}},
		{KindApp, "app_planner", "student", "Study Planner", "Member application", []string{"openid", "account:read", "account:write"}},
		{KindMetadata, "https://agent.example/client.json", "student", "Doc Agent", "Application published at agent.example", []string{"openid", "account:read"}},
		{KindLoopback, "sgc_cli", "owner", "school-cli", "Command-line or desktop app on a computer", []string{"openid", "courses:read"}},
	} {
		t.Run(c.kind, func(t *testing.T) {
			f := newFixture(t)
			f.storedClients()
			g := f.grantTo(c.clientID, c.person, c.scopes...)
			other := f.grantTo(confidential, c.person, "openid")
			page, rows := f.accountPage(c.person, "")
			if rows[c.clientID] != g.grantID || rows[confidential] != other.grantID || len(rows) != 2 {
				t.Fatalf("rows = %v; want the two grants\n%s", rows, page)
			}
			for _, want := range []string{c.name, c.words, "2026-11-23 10:00 UTC", "not yet"} {
				if !strings.Contains(htmlUnescape(page), want) {
					t.Errorf("the page lacks %q", want)
				}
			}
			for _, sc := range c.scopes {
				if !strings.Contains(htmlUnescape(page), "<code>"+sc+"</code>: ") {
					t.Errorf("scope %s is not shown in words", sc)
				}
			}
			res := f.disconnectForm(c.person, g.grantID, f.accountCSRF(c.person), nil)
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != sitepath.AccountApplications+"?done=disconnected" {
				t.Fatalf("disconnect = %d %q", res.StatusCode, res.Header.Get("Location"))
			}
			if _, err := f.srv.LookupAccessToken(context.Background(), g.access); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("the disconnected access token: %v", err)
			}
			if _, err := f.srv.LookupAccessToken(context.Background(), other.access); err != nil {
				t.Errorf("the other grant's access token: %v", err)
			}
			if _, err := f.store.GetConsent(context.Background(), c.clientID, people[c.person].Subject); !errors.Is(err, ErrNotFound) {
				t.Errorf("the consent was kept: %v", err)
			}
			page, rows = f.accountPage(c.person, "?done=disconnected")
			if _, ok := rows[c.clientID]; ok || len(rows) != 1 || !strings.Contains(page, `id="notice"`) {
				t.Errorf("after the disconnect: rows %v\n%s", rows, page)
			}
		})
	}
}

// The whole way: a token from the authorization flow, refused at the
// next request once disconnected, its refresh token invalid_grant, and
// the next authorization shows the consent page again.
func TestAccountDisconnectEndsTheFlow(t *testing.T) {
	f := newFixture(t)
	toks := f.tokens()
	access, refresh := toks["access_token"].(string), toks["refresh_token"].(string)
	if _, err := f.srv.LookupAccessToken(context.Background(), access); err != nil {
		t.Fatal(err)
	}
	// A refresh is recorded and shown.
	f.clock.Advance(2 * 60 * 60 * 1e9)
	status, m := f.token(refreshForm(refresh))
	if status != http.StatusOK {
		t.Fatalf("refresh: %d %v", status, m)
	}
	access, refresh = m["access_token"].(string), m["refresh_token"].(string)
	page, rows := f.accountPage("student", "")
	if !strings.Contains(page, `<td class="refreshed">2026-11-23 12:00 UTC</td>`) {
		t.Errorf("the refresh time is not shown:\n%s", page)
	}
	// Approved before, with a redirect that proves the client: no page.
	_, ch := pkce()
	if rec := f.authorize(authParams(ch), "student"); rec.Code != http.StatusFound {
		t.Fatalf("before the disconnect, authorize = %d, want a redirect", rec.Code)
	}
	res := f.disconnectForm("student", rows[memberClient], f.accountCSRF("student"), nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("disconnect = %d", res.StatusCode)
	}
	if _, err := f.srv.LookupAccessToken(context.Background(), access); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("access token after the disconnect: %v", err)
	}
	if status, m := f.token(refreshForm(refresh)); status != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Errorf("refresh after the disconnect: %d %v", status, m)
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
		name, person, grantID, csrf string
		hdr                         map[string]string
		status                      int
		says                        string
	}{
		{"another person's grant", "student", theirs.grantID, csrf, nil, http.StatusNotFound, "Nothing was changed"},
		{"an operator's grant", "student", ops.grantID, csrf, nil, http.StatusNotFound, "Nothing was changed"},
		{"forged grant id", "student", "forged", csrf, nil, http.StatusNotFound, "Nothing was changed"},
		{"no grant id", "student", "", csrf, nil, http.StatusNotFound, "Nothing was changed"},
		{"another person's form", "student", mine.grantID, otherCSRF, nil, http.StatusForbidden, "not issued to you"},
		{"no token", "student", mine.grantID, "", nil, http.StatusForbidden, "not issued to you"},
		{"an admin form's token", "student", mine.grantID, f.adminCSRF(), nil, http.StatusForbidden, "not issued to you"},
		{"cross-site origin", "student", mine.grantID, csrf, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden, "another site"},
		{"cross-site fetch", "student", mine.grantID, csrf, map[string]string{"Origin": "", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, "another site"},
		{"the other person with my form", "student2", mine.grantID, csrf, nil, http.StatusForbidden, "not issued to you"},
		{"the other person with their form", "student2", mine.grantID, otherCSRF, nil, http.StatusNotFound, "Nothing was changed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := f.adminPost(accountPathDisconnect, c.person, url.Values{"grant_id": {c.grantID}, "csrf_token": {c.csrf}}, c.hdr)
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
	// Replayed: the first disconnects, the second finds it done already.
	for i, want := range []string{"?done=disconnected", "?done=already"} {
		res := f.disconnectForm("student", mine.grantID, csrf, nil)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != sitepath.AccountApplications+want {
			t.Errorf("submission %d = %d %q", i+1, res.StatusCode, res.Header.Get("Location"))
		}
	}
	if _, err := f.srv.LookupAccessToken(context.Background(), theirs.access); err != nil {
		t.Errorf("the other person's grant: %v", err)
	}
	// A member never sees another's grants, nor, without an operator
	// role, grants that act as an operator; the operator sees their own.
	if _, rows := f.accountPage("student2", ""); len(rows) != 1 || rows["app_planner"] != theirs.grantID {
		t.Errorf("student2 sees %v", rows)
	}
	if _, rows := f.accountPage("owner", ""); len(rows) != 1 || rows["sgc_cli"] != ops.grantID {
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
		{"unknown page", "GET", sitepath.AccountArea + "/other", "student", http.StatusNotFound, "no such page", ""},
		{"the area itself", "GET", sitepath.AccountArea, "student", http.StatusNotFound, "no such page", ""},
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

// A person with many grants gets them a page at a time.
func TestAccountPages(t *testing.T) {
	f := newFixture(t)
	var want []string
	for range DefaultGrantPage + 3 {
		want = append(want, f.grantTo(memberClient, "student", "openid").grantID)
		f.clock.Advance(1e9)
	}
	var got []string
	query := ""
	for pages := 0; pages < 5; pages++ {
		page, _ := f.accountPage("student", query)
		for _, m := range reGrantRow.FindAllStringSubmatch(page, -1) {
			got = append(got, m[2])
		}
		next := regexp.MustCompile(`href="[^"?]*(\?after=[^"]+)" id="next-page"`).FindStringSubmatch(page)
		if next == nil {
			break
		}
		query = htmlUnescape(next[1])
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged: %d grants listed, want %d in order", len(got), len(want))
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
		{"page", "GET", []string{"ListGrants"}},
		{"page, naming the clients", "GET", []string{"GetClient"}},
		{"disconnect", "POST", []string{"DisconnectGrant"}},
		{"CSRF key", "POST", []string{"GetSetting"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs.fail(c.fail...)
			defer fs.fail("none")
			rec := f.adminGet(sitepath.AccountApplications, "student")
			if c.method == "POST" {
				rec = f.adminPost(accountPathDisconnect, "student", url.Values{"grant_id": {g.grantID}, "csrf_token": {csrf}}, nil)
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
