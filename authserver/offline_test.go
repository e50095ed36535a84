package authserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/sitepath"
)

// offlineClient is one kind of client asking for offline_access: who
// authorizes it, where its answer goes, and what it asks for.
type offlineClient struct {
	id, redirect, person, scope, secret string
	member                              bool // sends resource
}

// authorizeAndExchange runs authorize, consent and the code exchange for
// c; it returns the consent page and the token response.
func (f *fixture) authorizeAndExchange(c offlineClient) (string, int, map[string]any) {
	f.t.Helper()
	v, ch := pkce()
	q := url.Values{"response_type": {"code"}, "client_id": {c.id}, "redirect_uri": {c.redirect},
		"scope": {c.scope}, "state": {"st"}, "code_challenge": {ch}, "code_challenge_method": {"S256"}}
	if c.member {
		q.Set("resource", issuer)
	}
	rec := f.authorize(q, c.person)
	if rec.Code != http.StatusOK {
		f.t.Fatalf("authorize: want the consent page, got %d %s", rec.Code, rec.Header().Get("Location"))
	}
	page := rec.Body.String()
	code := redirectParams(f.t, f.consent(rec, c.person, "approve"), c.redirect).Get("code")
	if code == "" {
		f.t.Fatal("no code")
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {c.redirect},
		"client_id": {c.id}, "code_verifier": {v}}
	c.authenticate(form)
	status, m := f.token(form)
	return page, status, m
}

func (c offlineClient) authenticate(form url.Values) {
	if c.member {
		form.Set("resource", issuer)
	}
	if c.secret != "" {
		form.Set("client_secret", c.secret)
	}
}

// introspectScope is the scope introspection reports for token.
func (f *fixture) introspectScope(c offlineClient, token string) string {
	f.t.Helper()
	form := url.Values{"token": {token}, "client_id": {c.id}}
	c.authenticate(form)
	rec := f.serve("POST", sitepath.Introspect, strings.NewReader(form.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || m["active"] != true {
		f.t.Fatalf("introspection: %d %s", rec.Code, rec.Body)
	}
	s, _ := m["scope"].(string)
	return s
}

// offlineClients makes one client of every kind in f: vendors (one
// limited to a configured list that lacks offline_access, one of the
// operator audience), a member application, a self-registered loopback
// client and an unreviewed metadata-document client.
func offlineClients(t *testing.T, f *fixture) map[string]offlineClient {
	ctx := context.Background()
	f.enableMCP()
	app, err := f.srv.CreateApp(ctx, AppSpec{Name: "Planner", RedirectURIs: []string{appRedirect},
		Scopes: []string{"openid", "account:read"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	_, reg := f.register("application/json", `{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/cb"]}`)
	loopback, _ := reg["client_id"].(string)
	d := newDocServer(t)
	host := strings.TrimPrefix(d.URL, "https://")
	d.docs["/client.json"] = `{"client_id":"%s","client_name":"Doc Agent","redirect_uris":["https://` + host + `/cb"]}`
	f.useMetadata(d, MetadataDocumentsConfig{AllowPrivateNetworks: true})
	return map[string]offlineClient{
		"vendor":                    {id: memberClient, redirect: memberRedirect, person: "student", member: true, scope: "openid offline_access account:read"},
		"vendor with a scope list":  {id: confidential, redirect: memberRedirect, person: "student", member: true, secret: portalSecret, scope: "openid offline_access account:read"},
		"operator vendor":           {id: operatorClient, redirect: "http://127.0.0.1:5555/cb", person: "owner", scope: "openid offline_access courses:read"},
		"member application":        {id: app.ClientID, redirect: appRedirect, person: "student", member: true, scope: "openid offline_access account:read"},
		"loopback registration":     {id: loopback, redirect: "http://127.0.0.1:40100/cb", person: "owner", scope: "openid offline_access courses:read"},
		"metadata document":         {id: d.URL + "/client.json", redirect: "https://" + host + "/cb", person: "student", member: true, scope: "openid offline_access account:read"},
		"offline_access comes last": {id: memberClient, redirect: memberRedirect, person: "student", member: true, scope: "account:read openid offline_access"},
	}
}

// OpenID Connect Core §11: every kind of client may add offline_access to
// its scopes, whatever scopes it was given. The person is told, the grant
// keeps it (token response, introspection, refresh), and the refresh
// token comes as it always does.
func TestOfflineAccessForEveryClientKind(t *testing.T) {
	for name := range offlineClients(t, newFixture(t)) {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			c := offlineClients(t, f)[name]
			page, status, m := f.authorizeAndExchange(c)
			if !strings.Contains(page, `<li>offline_access</li>`) {
				t.Errorf("the consent page does not word offline_access:\n%s", page)
			}
			if status != http.StatusOK {
				t.Fatalf("exchange: %d %v", status, m)
			}
			rt, _ := m["refresh_token"].(string)
			if m["scope"] != c.scope || !strings.HasPrefix(rt, prefixRefresh) {
				t.Fatalf("token response scope %q, refresh token %q; want scope %q and a refresh token", m["scope"], rt, c.scope)
			}
			if got := f.introspectScope(c, m["access_token"].(string)); got != c.scope {
				t.Errorf("introspection scope %q, want %q", got, c.scope)
			}
			form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {c.id}}
			c.authenticate(form)
			status, r := f.token(form)
			if next, _ := r["refresh_token"].(string); status != http.StatusOK || r["scope"] != c.scope || next == "" || next == rt {
				t.Errorf("refresh: %d %v", status, r)
			}
		})
	}
}

// A request naming offline_access and nothing else is refused: such a
// grant would hold no scope a resource honours. Beside another scope,
// offline_access does not lift the client's other limits.
func TestOfflineAccessAloneOrBesideAForbiddenScope(t *testing.T) {
	f := newFixture(t)
	clients := offlineClients(t, f)
	for _, tc := range []struct {
		client, scope, desc string
	}{
		{"vendor", "offline_access", "offline_access alone"},
		{"operator vendor", "offline_access offline_access", "offline_access alone"},
		{"loopback registration", "offline_access account:read", "reserved to member clients"},
		{"metadata document", "openid offline_access account:write", "not allowed for this client"},
		{"vendor with a scope list", "offline_access account:write", "not allowed for this client"},
		{"vendor", "offline_access offline", "unknown scope offline"},
	} {
		t.Run(tc.client+" "+tc.scope, func(t *testing.T) {
			c := clients[tc.client]
			_, ch := pkce()
			q := url.Values{"response_type": {"code"}, "client_id": {c.id}, "redirect_uri": {c.redirect},
				"scope": {tc.scope}, "state": {"st"}, "code_challenge": {ch}, "code_challenge_method": {"S256"}}
			if c.member {
				q.Set("resource", issuer)
			}
			p := redirectParams(t, f.authorize(q, c.person), c.redirect)
			if p.Get("error") != "invalid_scope" || !strings.Contains(p.Get("error_description"), tc.desc) {
				t.Errorf("got %v, want invalid_scope saying %q", p, tc.desc)
			}
		})
	}
}

// Without offline_access the grant is as before: a refresh token all the
// same, and no offline_access in its scope. A refresh may narrow the scope
// to leave offline_access out, but not add it to a grant without it.
func TestRefreshTokenWithOrWithoutOfflineAccess(t *testing.T) {
	f := newFixture(t)
	c := offlineClients(t, f)["vendor"]
	c.scope = "openid account:read"
	_, status, m := f.authorizeAndExchange(c)
	rt, _ := m["refresh_token"].(string)
	if status != http.StatusOK || rt == "" || m["scope"] != "openid account:read" {
		t.Fatalf("without offline_access: %d %v", status, m)
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {c.id},
		"scope": {"openid offline_access"}}
	if status, r := f.token(form); status != http.StatusBadRequest || r["error"] != "invalid_scope" {
		t.Errorf("a refresh adding offline_access: %d %v", status, r)
	}

	c.scope, c.person = "openid offline_access account:read", "student2"
	_, _, m = f.authorizeAndExchange(c)
	form = url.Values{"grant_type": {"refresh_token"}, "refresh_token": {m["refresh_token"].(string)},
		"client_id": {c.id}, "scope": {"account:read"}}
	status, r := f.token(form)
	if status != http.StatusOK || r["scope"] != "account:read" {
		t.Fatalf("narrowed refresh: %d %v", status, r)
	}
	// The grant keeps offline_access: the next refresh may ask for all of it.
	form = url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r["refresh_token"].(string)}, "client_id": {c.id}}
	if status, r := f.token(form); status != http.StatusOK || r["scope"] != c.scope {
		t.Errorf("refresh after narrowing: %d %v", status, r)
	}
}

// An operator narrowing a client leaves offline_access to its grants, but
// offline_access alone keeps nothing: a grant left with no other scope
// must be authorized again.
func TestRefreshAfterTheClientLostItsScopes(t *testing.T) {
	f := newFixture(t)
	c := offlineClients(t, f)["member application"]
	_, _, m := f.authorizeAndExchange(c)
	ctx := context.Background()
	stored, err := f.store.GetClient(ctx, c.id)
	if err != nil {
		t.Fatal(err)
	}
	stored.Scopes = []string{"openid", "profile"}
	if err := f.store.PutClient(ctx, stored); err != nil {
		t.Fatal(err)
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {m["refresh_token"].(string)}, "client_id": {c.id}}
	status, r := f.token(form)
	if status != http.StatusOK || r["scope"] != "openid offline_access" {
		t.Fatalf("refresh after narrowing the client: %d %v", status, r)
	}
	stored.Scopes = []string{"email"}
	if err := f.store.PutClient(ctx, stored); err != nil {
		t.Fatal(err)
	}
	form.Set("refresh_token", r["refresh_token"].(string))
	if status, r := f.token(form); status != http.StatusBadRequest || r["error"] != "invalid_grant" {
		t.Errorf("refresh with offline_access the only scope left: %d %v", status, r)
	}
}

// offline_access is in the authorization server metadata and the OpenID
// configuration, not in the protected resource metadata; a registration
// answer says any client may ask for it.
func TestDiscoveryListsOfflineAccessOnlyForTheAuthorizationServer(t *testing.T) {
	f := newFixture(t)
	for path, want := range map[string]bool{
		sitepath.ASMetadata: true, sitepath.OIDCConfig: true, sitepath.ProtectedResource: false,
	} {
		var m struct {
			Scopes []string `json:"scopes_supported"`
		}
		if err := json.Unmarshal(f.serve("GET", path, nil, nil).Body.Bytes(), &m); err != nil || len(m.Scopes) == 0 {
			t.Fatalf("%s: %v %v", path, m, err)
		}
		if got := slices.Contains(m.Scopes, "offline_access"); got != want {
			t.Errorf("%s lists offline_access: %v, want %v (%v)", path, got, want, m.Scopes)
		}
	}
	_, reg := f.register("application/json", `{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/cb"]}`)
	if s, _ := reg["scope"].(string); !slices.Contains(strings.Fields(s), "offline_access") {
		t.Errorf("registration scope %q lacks offline_access", s)
	}
	_, reg = f.register("application/json", `{"client_name":"Portal","redirect_uris":["`+memberRedirect+`"]}`)
	if reg["scope"] != "openid profile email account:read offline_access" {
		t.Errorf("a vendor's registration scope: %v", reg["scope"])
	}
}
