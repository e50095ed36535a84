package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// Fuzz targets for the parsers of untrusted input at the authorization
// and token endpoints, and for scope strings. Seed corpora live in
// testdata/fuzz/<FuzzName>/; `go test` runs them, scripts/test.sh fuzzes.

const fuzzDocID = "https://agent.example/client.json"

// fuzzDocTransport serves one Client ID Metadata Document from memory and
// refuses everything else, so a fuzzed client_id never reaches a network.
type fuzzDocTransport struct{}

func (fuzzDocTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.String() != fuzzDocID {
		return nil, errors.New("offline")
	}
	body := `{"client_id":"` + fuzzDocID + `","client_name":"Agent",` +
		`"redirect_uris":["https://agent.example/cb","http://127.0.0.1/cb"]}`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// newFuzzFixture is the usual fixture without rate limits, with unsynced
// writes (speed only: nothing here survives the process) and in-memory
// metadata documents; MCP connections is on and a member application
// exists, so every kind of client is reachable.
func newFuzzFixture(f *testing.F) (*fixture, string) {
	fx := newFixture(f)
	fx.srv.limits = newLimiters(RateLimits{})
	if err := boltstore.NoSync(fx.store); err != nil {
		f.Fatal(err)
	}
	fx.srv.metadata = newMetadataResolver(MetadataDocumentsConfig{}, fx.clock.Now)
	fx.srv.metadata.client = &http.Client{Transport: fuzzDocTransport{}}
	fx.enableMCP()
	app, err := fx.srv.CreateApp(context.Background(), AppSpec{Name: "Fuzz App", RedirectURIs: []string{appRedirect, appLoopback},
		Scopes: []string{"openid", "account:read"}}, "")
	if err != nil {
		f.Fatal(err)
	}
	return fx, app.ClientID
}

var fuzzPeople = []string{"", "student", "owner", "nobody"}

// FuzzAuthorizeQuery sends an arbitrary raw query string to the
// authorization endpoint. Whatever it holds: no panic, no 5xx, and a
// redirect goes either to the login page or to a URI registered for the
// single client_id the request names, carrying iss and a code or an error.
func FuzzAuthorizeQuery(f *testing.F) {
	fx, appID := newFuzzFixture(f)
	_, ch := pkce()
	valid := authParams(ch)
	f.Add(valid.Encode(), uint8(1))
	f.Add(valid.Encode(), uint8(0))
	ops := authParams(ch)
	ops.Set("client_id", operatorClient)
	ops.Set("redirect_uri", "http://127.0.0.1:61000/cb")
	ops.Set("scope", "courses:read")
	f.Add(ops.Encode(), uint8(2))
	f.Add(appAuthParams(appID, ch, "openid account:read").Encode(), uint8(1))
	f.Add(url.Values(metadataAuthParams(fuzzDocID, "http://127.0.0.1:4000/cb", "openid")).Encode(), uint8(1))
	f.Add("client_id=member-app&redirect_uri=https%3A%2F%2Fevil.example%2Fcb&response_type=code", uint8(1))
	f.Add("client_id=member-app&redirect_uri=https://app.example/callback&prompt=none&%zz", uint8(3))

	f.Fuzz(func(t *testing.T, raw string, who uint8) {
		person := fuzzPeople[int(who)%len(fuzzPeople)]
		req := httptest.NewRequest("GET", sitepath.Authorize, nil)
		req.URL.RawQuery = raw
		if person != "" {
			req.Header.Set("Cookie", "session="+person)
		}
		rec := httptest.NewRecorder()
		fx.srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%d for %q:\n%s", rec.Code, raw, rec.Body)
		}
		loc := rec.Header().Get("Location")
		switch {
		case loc == "":
			// A page of package pages, which protects every page it
			// draws (its own tests).
			if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
				t.Fatalf("%d without an HTML page for %q", rec.Code, raw)
			}
			if rec.Code == http.StatusOK && reCSRF.FindStringSubmatch(rec.Body.String()) == nil {
				t.Fatalf("200 that is not the consent page for %q", raw)
			}
		case strings.HasPrefix(loc, issuer+"/login?"):
			if person != "" {
				t.Fatalf("a signed-in person sent to the login page for %q", raw)
			}
		default:
			q, _ := url.ParseQuery(raw) // what r.URL.Query() reads
			if len(q["client_id"]) != 1 || len(q["redirect_uri"]) != 1 {
				t.Fatalf("redirect to %q without exactly one client_id and redirect_uri in %q", loc, raw)
			}
			c, err := fx.srv.client(t.Context(), q.Get("client_id"))
			if err != nil {
				t.Fatalf("redirect to %q for an unknown client in %q: %v", loc, raw, err)
			}
			ru := q.Get("redirect_uri")
			if !MatchRedirect(c, ru) {
				t.Fatalf("redirect to %q, not registered for %s", ru, c.ID)
			}
			got, err := url.Parse(loc)
			want, _ := url.Parse(ru)
			if err != nil || got.Scheme != want.Scheme || got.Host != want.Host || got.EscapedPath() != want.EscapedPath() {
				t.Fatalf("Location %q is not the redirect URI %q", loc, ru)
			}
			lq := got.Query()
			if lq.Get("iss") != issuer || (lq.Get("code") == "") == (lq.Get("error") == "") {
				t.Fatalf("callback %q lacks iss, or has not exactly one of code and error", loc)
			}
		}
	})
}

// fuzzCode runs the member client's authorization (consent was given in
// setup) and returns a fresh code and its verifier.
func fuzzCode(t *testing.T, fx *fixture) (string, string) {
	v, ch := pkce()
	req := httptest.NewRequest("GET", sitepath.Authorize+"?"+authParams(ch).Encode(), nil)
	req.Header.Set("Cookie", "session=student")
	rec := httptest.NewRecorder()
	fx.srv.ServeHTTP(rec, req)
	u, err := url.Parse(rec.Header().Get("Location"))
	if err != nil || u.Query().Get("code") == "" {
		t.Fatalf("no code: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	return u.Query().Get("code"), v
}

// tokenErrors are the answers RFC 6749 §5.2 and RFC 8707 allow.
var tokenErrors = map[string]int{
	"invalid_request": 400, "invalid_client": 401, "invalid_grant": 400, "unauthorized_client": 400,
	"unsupported_grant_type": 400, "invalid_scope": 400, "invalid_target": 400,
}

// FuzzTokenForm posts an arbitrary form body to the token endpoint.
// "{code}", "{verifier}" and "{refresh}" in it become a fresh code of the
// member client, its verifier and a fresh refresh token, so the fuzzer
// works near valid requests too. Invariants: no panic, no 5xx, and either
// a 200 with usable tokens or an RFC 6749 JSON error.
func FuzzTokenForm(f *testing.F) {
	fx, _ := newFuzzFixture(f)
	_, ch := pkce()
	fx.code(authParams(ch), "") // consent, so later codes need no page
	for _, s := range []string{
		"grant_type=authorization_code&code={code}&redirect_uri=https%3A%2F%2Fapp.example%2Fcallback&client_id=member-app&code_verifier={verifier}&resource=https%3A%2F%2Fschool.example",
		"grant_type=refresh_token&refresh_token={refresh}&client_id=member-app",
		"grant_type=refresh_token&refresh_token={refresh}&client_id=member-app&scope=openid+account%3Aread",
		"grant_type=refresh_token&refresh_token={refresh}&client_id=portal&client_secret=portal-secret-value",
		"grant_type=authorization_code&code={code}&redirect_uri=https%3A%2F%2Fapp.example%2Fcallback&client_id=member-app&code_verifier={verifier}&resource=https%3A%2F%2Fschool.example&resource=https%3A%2F%2Fother.example",
		"grant_type=password&username=a&password=b",
		"grant_type=authorization_code&grant_type=authorization_code",
		"%zz=1&grant_type=refresh_token",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if strings.Contains(body, "{code}") {
			code, v := fuzzCode(t, fx)
			body = strings.ReplaceAll(strings.ReplaceAll(body, "{code}", code), "{verifier}", v)
		}
		if strings.Contains(body, "{refresh}") {
			code, v := fuzzCode(t, fx)
			status, m := fx.exchangeQuiet(code, v)
			if status != 200 {
				t.Fatalf("exchange for a refresh token: %d %v", status, m)
			}
			body = strings.ReplaceAll(body, "{refresh}", m["refresh_token"].(string))
		}
		body = strings.ReplaceAll(body, "{verifier}", strings.Repeat("v", 43))

		req := httptest.NewRequest("POST", sitepath.Token, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		fx.srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%d for %q: %s", rec.Code, body, rec.Body)
		}
		var m map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || rec.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("%d is not a no-store JSON answer for %q: %s", rec.Code, body, rec.Body)
		}
		if rec.Code == http.StatusOK {
			at, _ := m["access_token"].(string)
			rt, _ := m["refresh_token"].(string)
			scope, _ := m["scope"].(string)
			exp, _ := m["expires_in"].(float64)
			if !strings.HasPrefix(at, prefixAccess) || !strings.HasPrefix(rt, prefixRefresh) ||
				m["token_type"] != "Bearer" || exp <= 0 || scope == "" {
				t.Fatalf("malformed token response for %q: %v", body, m)
			}
			for _, sc := range strings.Fields(scope) {
				if !policy.IsRequestable(sc) {
					t.Fatalf("unknown scope %q issued for %q", sc, body)
				}
			}
			tok, err := fx.srv.LookupAccessToken(t.Context(), at)
			if err != nil || tok.Issuer != issuer || tok.Resource != issuer {
				t.Fatalf("the issued access token does not validate or is not bound here: %+v %v", tok, err)
			}
			return
		}
		code, _ := m["error"].(string)
		desc, _ := m["error_description"].(string)
		if want, ok := tokenErrors[code]; !ok || want != rec.Code || desc == "" || !isErrorText(desc) || len(desc) > maxErrorText {
			t.Fatalf("%d %v is not an RFC 6749 error answer for %q", rec.Code, m, body)
		}
		// A client that authenticates in the body is offered no HTTP
		// scheme, so its 401 carries no challenge (RFC 6749 §5.2).
		if rec.Header().Get("WWW-Authenticate") != "" {
			t.Fatalf("a challenge for a client that sent no Authorization header: %q", body)
		}
	})
}

// exchangeQuiet is exchange for fuzz targets, which must not fail the
// fixture's *testing.F.
func (f *fixture) exchangeQuiet(code, verifier string) (int, map[string]any) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {memberRedirect},
		"client_id": {memberClient}, "code_verifier": {verifier}, "resource": {issuer}}
	rec := f.serve("POST", sitepath.Token, strings.NewReader(form.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	var m map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &m)
	return rec.Code, m
}

// FuzzScopeParam feeds scope strings to the two places that parse them:
// the authorization request (for a member, an operator and an unreviewed
// metadata-document client) and a refresh. What is accepted is a known
// scope the client may hold, or offline_access beside one, deduplicated
// in request order; a refresh never widens the grant.
func FuzzScopeParam(f *testing.F) {
	for _, s := range []string{"openid profile email account:read", "account:read  account:read\topenid",
		"courses:write", "", " ", "openid\x00", "ACCOUNT:READ", "account:write openid",
		"openid offline_access", "offline_access", "offline_access account:read offline_access"} {
		f.Add(s)
	}
	s := &Server{cfg: Config{Issuer: issuer}}
	vendors := vendorClients([]VendorClient{
		{ClientID: memberClient, Name: "Member App", RedirectURIs: []string{memberRedirect}},
		{ClientID: operatorClient, Name: "Ops CLI", RedirectURIs: []string{opsRedirect}, Audience: store.AudienceOperator},
	})
	clients := []*store.Client{vendors[memberClient], vendors[operatorClient],
		{ID: fuzzDocID, Kind: store.KindMetadata, Audience: store.AudienceMember, Scopes: DefaultMemberScopes, RedirectURIs: []string{"https://agent.example/cb"}}}
	_, ch := pkce()
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

	f.Fuzz(func(t *testing.T, scope string) {
		fields := strings.Fields(scope)
		for _, c := range clients {
			q := url.Values{"response_type": {"code"}, "code_challenge_method": {"S256"}, "code_challenge": {ch},
				"scope": {scope}, "resource": {issuer}}
			req, e := s.parseAuthRequest(q, c)
			if e != nil {
				if (e.code != "invalid_request" && e.code != "invalid_scope") || e.desc == "" {
					t.Fatalf("%s: %q refused with %q %q", c.ID, scope, e.code, e.desc)
				}
				if (len(fields) == 0) != (e.code == "invalid_request") {
					t.Fatalf("%s: %q refused with %s", c.ID, scope, e.code)
				}
				continue
			}
			if !slices.Equal(req.Scopes, dedupe(fields)) {
				t.Fatalf("%s: %q parsed as %q", c.ID, scope, req.Scopes)
			}
			for _, sc := range req.Scopes {
				if sc == policy.OfflineAccess {
					continue
				}
				if !policy.IsScope(sc) || !slices.Contains(allowedScopes(c), sc) ||
					(c.Audience == store.AudienceOperator && slices.Contains(policy.MemberOnlyScopes, sc)) {
					t.Fatalf("%s: %q granted %q", c.ID, scope, sc)
				}
			}
			if !slices.ContainsFunc(req.Scopes, policy.IsScope) {
				t.Fatalf("%s: %q granted no scope of the table: %q", c.ID, scope, req.Scopes)
			}
		}

		// A refresh of a grant of "openid account:read" asking for scope.
		grant := []string{"openid", "account:read"}
		c := clients[0]
		tok := &store.Token{Kind: store.TokenRefresh, ClientID: c.ID, Scopes: grant, ExpiresAt: now.Add(time.Hour)}
		got, e := s.checkRefresh(tok, &store.Grant{Audience: store.AudienceMember, Scopes: grant}, c, url.Values{"scope": {scope}}, now)
		if e != nil {
			if e.Code != "invalid_scope" || len(fields) == 0 {
				t.Fatalf("refresh with %q: %v", scope, e)
			}
			return
		}
		for _, sc := range got {
			if !slices.Contains(grant, sc) {
				t.Fatalf("refresh with %q widened the grant to %q", scope, got)
			}
		}
		if len(fields) > 0 && !slices.Equal(got, dedupe(fields)) {
			t.Fatalf("refresh with %q gave %q", scope, got)
		}
	})
}
