package authserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/sitepath"
)

// TestRouteFor holds the table's lookup to the URL space sitepath
// describes: every route is reachable through the gateway, each exact
// path finds its own route, and the areas are exactly what IsAdmin,
// IsAccountPages and the assets' prefix say.
func TestRouteFor(t *testing.T) {
	seen := map[string]bool{}
	for i := range routes {
		rt := &routes[i]
		if seen[rt.Path] {
			t.Errorf("%s has two routes", rt.Path)
		}
		seen[rt.Path] = true
		if !sitepath.IsAuthServer(rt.Path) {
			t.Errorf("%s is not sent to the authorization server (sitepath.IsAuthServer)", rt.Path)
		}
		if rt.serve == nil {
			t.Errorf("%s has no handler", rt.Path)
		}
		if got := routeFor(rt.Path); got != rt {
			t.Errorf("routeFor(%s) = %q", rt.Path, got.Path)
		}
	}
	area := func(p string) string {
		switch {
		case sitepath.IsAdmin(p):
			return sitepath.Admin
		case sitepath.IsAccountPages(p):
			return sitepath.AccountPages
		case strings.HasPrefix(p, sitepath.Assets):
			return sitepath.Assets
		}
		return ""
	}
	for _, p := range []string{sitepath.Admin + "/", sitepath.AdminApplications, sitepath.AdminApplications + "/x/review",
		"/oauth/administrator", "/oauth/adminx/y", sitepath.AccountApplications, sitepath.AccountApplications + "/disconnect",
		"/oauth/accounts", sitepath.Assets + "pages-0123456789ab.css", sitepath.Assets + "unknown", "/oauth/assets", "/oauth", "/oauth/other",
		"/api/oauth", "/api/oauth/unknown", sitepath.OIDCConfig + "/x", sitepath.ProtectedResource + "/mcp",
		sitepath.Token + "/", strings.Repeat("/x", 100)} {
		rt := routeFor(p)
		want := area(p)
		if want == "" {
			if rt != &notFound {
				t.Errorf("routeFor(%s) = %q, want none", p, rt.Path)
			}
			continue
		}
		if rt.Path != want {
			t.Errorf("routeFor(%s) = %q, want the area %s", p, rt.Path, want)
		}
	}
}

// refusals records what the server counts as refused.
type refusals struct {
	nopObserver
	mu   sync.Mutex
	last string
}

func (o *refusals) Refused(endpoint, code string) {
	o.mu.Lock()
	o.last = endpoint + " " + code
	o.mu.Unlock()
}

// TestRefusalNames pins the endpoint label of oauth_refused_total, which
// dashboards and alerts select on: each route's name, for the limits
// and for the refusals of its handler.
func TestRefusalNames(t *testing.T) {
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	tests := []struct {
		method, path string
		hdr          map[string]string
		body, want   string
	}{
		{"POST", sitepath.Token, form, "grant_type=refresh_token&refresh_token=x&client_id=" + memberClient, "token rate_limited"},
		{"GET", sitepath.Token, nil, "", "token invalid_request"},
		{"POST", sitepath.Revoke, form, "token=x&client_id=" + memberClient, "revoke rate_limited"},
		{"POST", sitepath.Revoke, form, "token=x", "revoke invalid_client"},
		{"POST", sitepath.Introspect, form, "token=x&client_id=" + memberClient, "introspect rate_limited"},
		{"POST", sitepath.Introspect, form, "client_id=" + memberClient, "introspect invalid_request"},
		{"POST", sitepath.Register, map[string]string{"Content-Type": "application/json"}, `{"redirect_uris":["http://127.0.0.1:1/cb"]}`, "register rate_limited"},
		{"POST", sitepath.Register, nil, "{", "register invalid_client_metadata"},
		{"GET", sitepath.Authorize, nil, "", "authorize rate_limited"},
		{"GET", sitepath.Consent, nil, "", "authorize rate_limited"},
		{"GET", sitepath.AccountApplications, nil, "", "other rate_limited"},
	}
	for _, tt := range tests {
		t.Run(tt.want+" at "+tt.path, func(t *testing.T) {
			f := newFixture(t)
			obs := &refusals{}
			f.srv.cfg.Observer = obs
			if strings.HasSuffix(tt.want, "rate_limited") {
				one := Per(1, time.Hour, 1)
				f.srv.limits = newLimiters(RateLimits{Register: one, Authorize: one, Token: one, Revoke: one})
				f.serve(tt.method, tt.path, strings.NewReader(tt.body), tt.hdr)
			}
			rec := f.serve(tt.method, tt.path, strings.NewReader(tt.body), tt.hdr)
			if obs.last != tt.want {
				t.Errorf("counted %q, want %q (status %d)", obs.last, tt.want, rec.Code)
			}
		})
	}
}

// TestDiscoveryNamesEndpoints pins the endpoints of the authorization
// server metadata, which come from the route table.
func TestDiscoveryNamesEndpoints(t *testing.T) {
	f := newFixture(t)
	want := map[string]string{
		"authorization_endpoint": sitepath.Authorize,
		"token_endpoint":         sitepath.Token,
		"userinfo_endpoint":      sitepath.UserInfo,
		"revocation_endpoint":    sitepath.Revoke,
		"introspection_endpoint": sitepath.Introspect,
		"registration_endpoint":  sitepath.Register,
		"jwks_uri":               sitepath.JWKS,
	}
	for _, path := range []string{sitepath.ASMetadata, sitepath.OIDCConfig} {
		rec := f.serve("GET", path, nil, nil)
		var m map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %v", path, rec.Code, err)
		}
		for field, p := range want {
			if m[field] != issuer+p {
				t.Errorf("%s: %s = %v, want %s", path, field, m[field], issuer+p)
			}
		}
		for field := range m {
			if strings.HasSuffix(field, "_endpoint") && want[field] == "" {
				t.Errorf("%s: unexpected %s", path, field)
			}
		}
	}
}

// The discovery documents and the key set go out with their length, in
// one piece, not chunked: the OpenID configuration outgrew net/http's
// 2 KB response buffer, past which it would chunk and write twice.
func TestDiscoveryAnswersSized(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(f.srv)
	defer srv.Close()
	for _, path := range []string{sitepath.ASMetadata, sitepath.OIDCConfig, sitepath.JWKS} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) != 0 {
			t.Errorf("%s: %d, length %d of %d bytes, transfer encoding %v", path, resp.StatusCode, resp.ContentLength, len(body), resp.TransferEncoding)
		}
	}
}

// A browser reads the methods, headers and lifetime it may use from a
// preflight's answer only; every other answer carries just the origin and
// the exposed headers. A discovery document's answer keeps within seven
// headers of its own: with the Server header Caddy adds they are the eight
// a Go map holds in one group, and net/http clones the map when the header
// is written. A ninth (the three preflight headers on every answer, once
// Content-Length was set) made that clone and every lookup in it dearer:
// 0.89–0.96× the discovery throughput of the build before, through Caddy.
func TestCORSPreflightOnly(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(f.srv)
	defer srv.Close()
	preflightOnly := []string{"Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Max-Age"}
	for _, path := range []string{sitepath.ASMetadata, sitepath.OIDCConfig, sitepath.JWKS} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Retry-After") {
			t.Errorf("%s: not readable by a browser: %v", path, resp.Header)
		}
		for _, k := range preflightOnly {
			if v, ok := resp.Header[k]; ok {
				t.Errorf("%s: %s %q outside a preflight", path, k, v)
			}
		}
		own := len(resp.Header)
		if _, ok := resp.Header["Date"]; ok {
			own-- // net/http's, written from its own buffer
		}
		if own > 7 {
			t.Errorf("%s: %d headers of the handler's own, want at most 7: %v", path, own, resp.Header)
		}
	}
	req, _ := http.NewRequest(http.MethodOptions, srv.URL+sitepath.Token, nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Max-Age") != "600" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "DPoP") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
}
