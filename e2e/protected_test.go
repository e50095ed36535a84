package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/schoolgate/schoolgate/policy"
)

// tokenFor runs the authorization code flow for a configured vendor
// client and returns its tokens.
func tokenFor(t testing.TB, origin, clientID, redirect, scope, email, password string) *oauth2.Token {
	t.Helper()
	conf := oauth2.Config{ClientID: clientID, RedirectURL: redirect, Scopes: strings.Fields(scope),
		Endpoint: oauth2.Endpoint{AuthURL: origin + "/oauth/authorize", TokenURL: origin + "/api/oauth/token",
			AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", origin))
	cb := newBrowser(t, redirect).signInAndApprove(origin, authURL, email, password)
	tok, err := conf.Exchange(t.Context(), cb.Query().Get("code"), oauth2.VerifierOption(verifier),
		oauth2.SetAuthURLParam("resource", origin))
	if err != nil {
		t.Fatalf("exchange at %s: %v", origin, err)
	}
	return tok
}

const viewerQuery = `{"query":"{ viewer { id email enrolledCourses(first: 5) { nodes { slug expireDate hasLifetimeAccess lastWatchedLecture { lectureId positionSeconds } } } } }"}`

func call(t *testing.T, method, u, token, body string, hdr map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return do(t, req)
}

// lastUpstreamRequest is what the demo school last received on a
// protected path.
func lastUpstreamRequest(t *testing.T, school string) http.Header {
	t.Helper()
	_, _, body := get(t, school+"/__demo/last-request")
	var rec struct {
		Path    string              `json:"path"`
		Headers map[string][]string `json:"headers"`
	}
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatalf("recorder: %v %s", err, body)
	}
	return http.Header(rec.Headers)
}

func vendorBlock(name, id, redirect, audience, scopes string) string {
	return fmt.Sprintf("\t\tvendor %q {\n\t\t\tclient_id %s\n\t\t\tredirect_uri %s\n\t\t\taudience %s\n\t\t\tscopes %s\n\t\t}\n",
		name, id, redirect, audience, scopes)
}

func TestProtectedResources(t *testing.T) {
	schA, schB := startSchool(t), startSchool(t)
	portA, portB := freePort(t), freePort(t)
	dir := t.TempDir()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	clients := vendorBlock("Member App", "member-app", redirect, "member", "openid profile email account:read") +
		vendorBlock("Ops Tool", "ops-tool", redirect, "operator", "openid courses:read courses:write students:read")
	gw := startGateway(t, dir,
		siteBlock(portA, schA.URL, filepath.Join(dir, "a"), clients),
		siteBlock(portB, schB.URL, filepath.Join(dir, "b"), clients))
	a, b := gw.URL, fmt.Sprintf("http://127.0.0.1:%d", portB)

	member := tokenFor(t, a, "member-app", redirect, "openid profile email account:read", "student@demo.school", "student")
	operator := tokenFor(t, a, "ops-tool", redirect, "openid courses:read students:read", "owner@demo.school", "owner")
	memberB := tokenFor(t, b, "member-app", redirect, "openid account:read", "student@demo.school", "student")
	prm := a + "/.well-known/oauth-protected-resource"

	tests := []struct {
		name, method, path, token, body string
		hdr                             map[string]string
		status                          int
		errCode, scope                  string
	}{
		{"member reads own account", "POST", "/account/graphql", member.AccessToken, viewerQuery, nil, 200, "", ""},
		{"no token", "POST", "/account/graphql", "", viewerQuery, nil, 401, "invalid_token", ""},
		{"unknown token", "POST", "/account/graphql", "sgat_nope", viewerQuery, nil, 401, "invalid_token", ""},
		{"malformed token", "POST", "/account/graphql", "a b", viewerQuery, nil, 401, "invalid_token", ""},
		{"token of site B", "POST", "/account/graphql", memberB.AccessToken, viewerQuery, nil, 401, "invalid_token", ""},
		{"refresh token as access token", "POST", "/account/graphql", member.RefreshToken, viewerQuery, nil, 401, "invalid_token", ""},
		{"operator token at account API", "POST", "/account/graphql", operator.AccessToken, viewerQuery, nil, 403, "insufficient_scope", "account:read"},
		{"GET on account API", "GET", "/account/graphql", member.AccessToken, "", nil, 405, "", ""},
		{"token in query only", "POST", "/account/graphql?access_token=" + member.AccessToken, "", viewerQuery, nil, 400, "invalid_request", ""},
		{"path trick double slash", "POST", "//account//graphql", "", viewerQuery, nil, 401, "invalid_token", ""},
		{"path trick case", "POST", "/Account/GraphQL", "", viewerQuery, nil, 401, "invalid_token", ""},
		{"path trick encoded", "POST", "/account%2Fgraphql", "", viewerQuery, nil, 400, "invalid_request", ""},
		{"operator reads courses", "GET", "/admin/api/courses", operator.AccessToken, "", nil, 200, "", ""},
		{"operator lacks write", "POST", "/admin/api/courses", operator.AccessToken, `{"title":"x"}`, nil, 403, "insufficient_scope", "courses:write"},
		{"member at admin API", "GET", "/admin/api/courses", member.AccessToken, "", nil, 403, "insufficient_scope", "courses:read"},
		{"unknown area", "GET", "/admin/api/secrets", operator.AccessToken, "", nil, 403, "insufficient_scope", ""},
		{"admin without token", "GET", "/admin/api/students", "", "", nil, 401, "invalid_token", ""},
		{"admin dot-dot trick", "GET", "/admin/api/courses/../secrets", operator.AccessToken, "", nil, 403, "insufficient_scope", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, tt.method, a+tt.path, tt.token, tt.body, tt.hdr)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if tt.errCode == "" {
				return
			}
			params, err := policy.ParseChallenge(r.header.Get("WWW-Authenticate"))
			if err != nil {
				t.Fatalf("WWW-Authenticate %q: %v", r.header.Get("WWW-Authenticate"), err)
			}
			if params["error"] != tt.errCode || params["resource_metadata"] != prm || params["scope"] != tt.scope {
				t.Errorf("challenge %v, want error=%s scope=%q resource_metadata=%s", params, tt.errCode, tt.scope, prm)
			}
			if !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate") {
				t.Error("WWW-Authenticate is not exposed to browsers")
			}
			if jsonOf(t, r.body)["error"] != tt.errCode {
				t.Errorf("body %s", r.body)
			}
		})
	}

	// What the legacy server receives: identity headers, never the token,
	// never a client's own X-School-* headers.
	r := call(t, "POST", a+"/account/graphql", member.AccessToken, viewerQuery,
		map[string]string{"X-School-Subject": "operator-1", "X-School-Roles": "owner", "x-school-extra": "1"})
	if r.status != 200 || !strings.Contains(string(r.body), "student@demo.school") {
		t.Fatalf("account API: %d %s", r.status, r.body)
	}
	h := lastUpstreamRequest(t, schA.URL)
	want := map[string]string{"X-School-Subject": "member-1", "X-School-Email": "student@demo.school",
		"X-School-Audience": "member", "X-School-Client-Id": "member-app", "X-School-Roles": "student",
		"X-School-Scopes": "openid profile email account:read"}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("upstream %s = %q, want %q", k, got, v)
		}
	}
	if h.Get("Authorization") != "" || h.Get("X-School-Extra") != "" || len(h.Values("X-School-Subject")) != 1 {
		t.Errorf("upstream saw client credentials or headers: %v", h)
	}

	// Pass-through requests lose a bearer token and forged identity too.
	call(t, "GET", a+"/courses/photography-fundamentals", member.AccessToken, "", map[string]string{"X-School-Subject": "x"})
	// (the recorder only sees protected paths; the demo school's pages
	// ignore identity headers, so this checks the gateway does not fail)

	// Revocation is effective on the next request, cache warm or not.
	if r := postForm(t, a+"/api/oauth/revoke", url.Values{"token": {member.AccessToken}, "client_id": {"member-app"}}); r.status != 200 {
		t.Fatalf("revoke: %d", r.status)
	}
	if r := call(t, "POST", a+"/account/graphql", member.AccessToken, viewerQuery, nil); r.status != 401 {
		t.Errorf("revoked token: %d", r.status)
	}
	// Site B is unaffected by site A's revocation.
	if r := call(t, "POST", b+"/account/graphql", memberB.AccessToken, viewerQuery, nil); r.status != 200 {
		t.Errorf("site B token: %d %s", r.status, r.body)
	}
}

// An unreachable legacy server is a clean 502 after the token check,
// never a hang or an empty answer.
func TestUpstreamDownIsBadGateway(t *testing.T) {
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	clients := vendorBlock("Member App", "member-app", redirect, "member", "openid account:read")
	block := siteBlock(port, sch.URL, filepath.Join(dir, "a"), clients)
	gw := startGateway(t, dir, block)
	member := tokenFor(t, gw.URL, "member-app", redirect, "openid account:read", "student@demo.school", "student")

	dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	gw.reload(strings.ReplaceAll(block, "school_gateway "+sch.URL, "school_gateway "+dead))
	waitHTTP(t, gw.URL+"/.well-known/jwks.json")
	if r := call(t, "POST", gw.URL+"/account/graphql", member.AccessToken, viewerQuery, nil); r.status != http.StatusBadGateway {
		t.Errorf("account API with the upstream down: %d %s", r.status, r.body)
	}
	if r := call(t, "POST", gw.URL+"/account/graphql", "", viewerQuery, nil); r.status != 401 {
		t.Errorf("the token check must come first: %d", r.status)
	}
}
