package authserver

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/store"
)

func TestCreateAppValidation(t *testing.T) {
	f := newFixture(t)
	ok := AppSpec{Name: "Planner", RedirectURIs: []string{appRedirect}, Scopes: []string{"openid", "account:read"}}
	tests := []struct {
		name   string
		change func(*AppSpec)
		want   string // "" = accepted
	}{
		{"valid", func(*AppSpec) {}, ""},
		{"trimmed name, duplicate and blank URIs dropped", func(s *AppSpec) {
			s.Name = "  Planner  "
			s.RedirectURIs = []string{appRedirect, " ", appRedirect}
		}, ""},
		{"loopback http", func(s *AppSpec) { s.RedirectURIs = []string{"http://127.0.0.1:9000/cb"} }, ""},
		{"empty name", func(s *AppSpec) { s.Name = " " }, "name"},
		{"control character", func(s *AppSpec) { s.Name = "a\x00b" }, "control"},
		{"long name", func(s *AppSpec) { s.Name = strings.Repeat("n", maxAppNameLen+1) }, "at most"},
		{"no redirect", func(s *AppSpec) { s.RedirectURIs = nil }, "at least one redirect"},
		{"http redirect", func(s *AppSpec) { s.RedirectURIs = []string{"http://app.example/cb"} }, "https"},
		{"fragment", func(s *AppSpec) { s.RedirectURIs = []string{"https://app.example/cb#x"} }, "fragment"},
		{"userinfo", func(s *AppSpec) { s.RedirectURIs = []string{"https://u@app.example/cb"} }, "user name"},
		{"relative", func(s *AppSpec) { s.RedirectURIs = []string{"/cb"} }, "absolute"},
		{"too many redirects", func(s *AppSpec) { s.RedirectURIs = manyURIs(maxAppRedirectURIs + 1) }, "at most"},
		{"operator scope", func(s *AppSpec) { s.Scopes = []string{"courses:write"} }, "cannot be given"},
		{"no scope", func(s *AppSpec) { s.Scopes = nil }, "at least one scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := ok
			spec.RedirectURIs = append([]string(nil), ok.RedirectURIs...)
			tt.change(&spec)
			app, err := f.srv.CreateApp(context.Background(), spec, "")
			var ie *InputError
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want == "":
				if app.Name != "Planner" || len(app.RedirectURIs) != 1 || app.Kind != store.KindApp ||
					app.Audience != store.AudienceMember || app.AuthMethod != "none" || app.ClientSecret != "" {
					t.Errorf("created %+v", app)
				}
			case !errors.As(err, &ie) || !strings.Contains(ie.Msg, tt.want):
				t.Errorf("got %v, want an input error about %q", err, tt.want)
			}
		})
	}
}

func TestCreateAppIdempotentAndConfidential(t *testing.T) {
	f := newFixture(t)
	spec := AppSpec{Name: "Billing", RedirectURIs: []string{appRedirect}, Scopes: []string{"account:read"}, Confidential: true}
	first, err := f.srv.CreateApp(context.Background(), spec, "key-1")
	if err != nil || first.Existing || !strings.HasPrefix(first.ClientSecret, prefixSecret) ||
		first.AuthMethod != "client_secret_post" {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := f.srv.CreateApp(context.Background(), spec, "key-1")
	if err != nil || !again.Existing || again.ClientID != first.ClientID || again.ClientSecret != "" {
		t.Fatalf("same key: %+v %v", again, err)
	}
	other, err := f.srv.CreateApp(context.Background(), spec, "key-2")
	if err != nil || other.ClientID == first.ClientID {
		t.Fatalf("another key: %+v %v", other, err)
	}
	stored, _ := f.store.GetClient(context.Background(), first.ClientID)
	if stored.SecretHash == "" || strings.Contains(stored.SecretHash, first.ClientSecret) {
		t.Errorf("the secret must be stored hashed: %q", stored.SecretHash)
	}
	list, err := f.srv.ListClients(context.Background())
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %d %v", len(list), err)
	}
	_, secret, err := f.srv.RegenerateSecret(context.Background(), first.ClientID)
	if err != nil || secret == first.ClientSecret || secret == "" {
		t.Errorf("regenerate: %v", err)
	}
}

func TestClientOperationsOnWrongClients(t *testing.T) {
	f := newFixture(t)
	pub, err := f.srv.CreateApp(context.Background(), AppSpec{Name: "P", RedirectURIs: []string{appRedirect}, Scopes: []string{"openid"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	var ie *InputError
	if _, _, err := f.srv.RegenerateSecret(context.Background(), pub.ClientID); !errors.As(err, &ie) {
		t.Errorf("secret of a public app: %v", err)
	}
	if _, err := f.srv.ReviewClient(context.Background(), pub.ClientID, []string{"openid"}, true); !errors.Is(err, ErrWrongKind) {
		t.Errorf("review of an app: %v", err)
	}
	if _, err := f.srv.DeleteClient(context.Background(), memberClient); !errors.Is(err, store.ErrNotFound) && !errors.Is(err, ErrWrongKind) {
		t.Errorf("delete of a vendor: %v", err)
	}
	for _, id := range []string{"", "nope", strings.Repeat("x", MaxClientIDLen+1)} {
		if _, err := f.srv.DeleteClient(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("delete %q: %v", id, err)
		}
		if _, err := f.srv.UpdateApp(context.Background(), id, AppSpec{}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("update %q: %v", id, err)
		}
	}
}

// appTokens authorizes a member application as the student and returns
// its token response.
func (f *fixture) appTokens(clientID, scope string) map[string]any {
	f.t.Helper()
	v, c := pkce()
	code := f.code(appAuthParams(clientID, c, scope), v)
	status, m := f.token(url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {appRedirect}, "client_id": {clientID}, "code_verifier": {v}, "resource": {issuer}})
	if status != http.StatusOK {
		f.t.Fatalf("exchange: %d %v", status, m)
	}
	return m
}

func TestNarrowedAppScopesApplyAtRefresh(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	app, err := f.srv.CreateApp(context.Background(), AppSpec{Name: "Planner", RedirectURIs: []string{appRedirect},
		Scopes: []string{"openid", "account:read", "account:write"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	m := f.appTokens(app.ClientID, "openid account:read account:write")
	if _, err := f.srv.UpdateApp(context.Background(), app.ClientID, AppSpec{Name: "Planner", RedirectURIs: []string{appRedirect},
		Scopes: []string{"openid", "account:read"}}); err != nil {
		t.Fatal(err)
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {m["refresh_token"].(string)},
		"client_id": {app.ClientID}}
	status, r := f.token(form)
	if status != http.StatusOK || r["scope"] != "openid account:read" {
		t.Fatalf("refresh after narrowing: %d %v", status, r)
	}
	// Narrowed to nothing the grant holds: the refresh is refused.
	if _, err := f.srv.UpdateApp(context.Background(), app.ClientID, AppSpec{Name: "Planner", RedirectURIs: []string{appRedirect},
		Scopes: []string{"email"}}); err != nil {
		t.Fatal(err)
	}
	form.Set("refresh_token", r["refresh_token"].(string))
	if status, r := f.token(form); status != http.StatusBadRequest || r["error"] != "invalid_grant" {
		t.Errorf("refresh with no scope left: %d %v", status, r)
	}
}

func TestSwitchingOffDisconnectsApps(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	app, err := f.srv.CreateApp(context.Background(), AppSpec{Name: "Planner", RedirectURIs: []string{appRedirect},
		Scopes: []string{"openid", "account:read"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	m := f.appTokens(app.ClientID, "openid account:read")
	member := f.tokens()
	if _, err := f.srv.LookupAccessToken(t.Context(), m["access_token"].(string)); err != nil {
		t.Fatalf("app token before: %v", err)
	}
	if err := f.srv.SetMCPConnections(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if _, err := f.srv.LookupAccessToken(t.Context(), m["access_token"].(string)); err == nil {
		t.Error("an application's token still works after MCP connections were switched off")
	}
	if _, err := f.srv.LookupAccessToken(t.Context(), member["access_token"].(string)); err != nil {
		t.Errorf("a vendor client's token must survive the switch: %v", err)
	}
	// Switched on again, the application is there and can authorize anew.
	f.enableMCP()
	f.appTokens(app.ClientID, "openid")
}

func TestDeleteAndReviewThroughTheAPI(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	app, err := f.srv.CreateApp(context.Background(), AppSpec{Name: "Planner", RedirectURIs: []string{appRedirect},
		Scopes: []string{"openid", "account:read"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	m := f.appTokens(app.ClientID, "openid account:read")
	n, err := f.srv.DeleteClient(context.Background(), app.ClientID)
	if err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
	if _, err := f.srv.LookupAccessToken(t.Context(), m["access_token"].(string)); err == nil {
		t.Error("a deleted application's token still works")
	}
	md := &store.Client{ID: "https://agent.example/client.json", Name: "Agent", Kind: store.KindMetadata,
		Audience: store.AudienceMember, RedirectURIs: []string{"http://127.0.0.1/cb"}, Scopes: DefaultMemberScopes, AuthMethod: "none"}
	if err := f.store.PutClient(context.Background(), md); err != nil {
		t.Fatal(err)
	}
	info, err := f.srv.ReviewClient(context.Background(), md.ID, []string{"openid", "account:read", "account:write"}, false)
	if err != nil || info.Reviewed || strings.Contains(strings.Join(info.AllowedScopes, " "), "account:write") {
		t.Fatalf("unreviewed keeps the read limit: %+v %v", info, err)
	}
	info, err = f.srv.ReviewClient(context.Background(), md.ID, []string{"openid", "account:read", "account:write"}, true)
	if err != nil || !info.Reviewed || !strings.Contains(strings.Join(info.AllowedScopes, " "), "account:write") {
		t.Fatalf("reviewed: %+v %v", info, err)
	}
	var ie *InputError
	if _, err := f.srv.ReviewClient(context.Background(), md.ID, []string{"admin:read"}, true); !errors.As(err, &ie) {
		t.Errorf("operator scope on a metadata client: %v", err)
	}
}
