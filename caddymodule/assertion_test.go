package caddymodule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/policy"
)

func TestIdentityAssertionCaddyfile(t *testing.T) {
	tests := []struct {
		name, upstream, options string
		want                    *IdentityAssertion // after setDefaults
	}{
		{"off by default", "http://127.0.0.1:9080", "", nil},
		{"off", "http://127.0.0.1:9080", "identity_assertion off", nil},
		{"on: the upstream's origin", "http://127.0.0.1:9080", "identity_assertion on",
			&IdentityAssertion{Audience: "http://127.0.0.1:9080"}},
		{"on: origin without trailing slash, default port or upper case", "HTTPS://Legacy.Internal:443/", "identity_assertion on",
			&IdentityAssertion{Audience: "https://legacy.internal"}},
		{"on with an audience", "http://127.0.0.1:9080", "identity_assertion on {\n audience urn:school:legacy\n}",
			&IdentityAssertion{Audience: "urn:school:legacy"}},
		{"the last line wins", "http://127.0.0.1:9080", "identity_assertion on\n identity_assertion off", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := caddyfile.NewTestDispenser("school_gateway " + tt.upstream + " {\n" + tt.options + "\n}")
			d.Next()
			g := Gateway{Issuer: "https://school.example"}
			if err := g.UnmarshalCaddyfile(d); err != nil {
				t.Fatal(err)
			}
			g.setDefaults()
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == nil && g.IdentityAssertion != nil:
				t.Errorf("identity_assertion = %+v, want off", *g.IdentityAssertion)
			case tt.want != nil && (g.IdentityAssertion == nil || *g.IdentityAssertion != *tt.want):
				t.Errorf("identity_assertion = %+v, want %+v", g.IdentityAssertion, *tt.want)
			}
		})
	}
}

func TestIdentityAssertionCaddyfileErrors(t *testing.T) {
	tests := []struct{ options, want string }{
		{"identity_assertion", "identity_assertion: expects exactly one value"},
		{"identity_assertion yes", "identity_assertion: expects on or off"},
		{"identity_assertion on off", "identity_assertion: expects exactly one value"},
		{"identity_assertion off {\n audience x\n}", "identity_assertion off: takes no block"},
		{"identity_assertion on {\n audience\n}", "identity_assertion audience: expects exactly one value"},
		{"identity_assertion on {\n audience a b\n}", "identity_assertion audience: expects exactly one value"},
		{"identity_assertion on {\n audience a\n audience b\n}", "identity_assertion audience: given twice"},
		{"identity_assertion on {\n issuer x\n}", `identity_assertion: unknown option "issuer"`},
	}
	for _, tt := range tests {
		d := caddyfile.NewTestDispenser("school_gateway http://127.0.0.1:9 {\n" + tt.options + "\n}")
		d.Next()
		var g Gateway
		err := g.UnmarshalCaddyfile(d)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.options, err, tt.want)
		}
	}
}

func TestIdentityAssertionValidate(t *testing.T) {
	for _, aud := range []string{" padded", "tab\t", "line\nbreak", "nul\x00"} {
		g := Gateway{Upstream: "http://127.0.0.1:9080", Issuer: "https://school.example",
			IdentityAssertion: &IdentityAssertion{Audience: aud}}
		g.setDefaults()
		if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "identity_assertion audience") {
			t.Errorf("audience %q: %v", aud, err)
		}
	}
	// A bad upstream has no origin to default to: the upstream is named.
	g := Gateway{Upstream: "http://127.0.0.1:9080/app", Issuer: "https://school.example", IdentityAssertion: &IdentityAssertion{}}
	g.setDefaults()
	if err := g.Validate(); err == nil || !strings.HasPrefix(err.Error(), "upstream") {
		t.Errorf("bad upstream: %v", err)
	}
}

// The adapted JSON names the audience, so `caddy adapt` shows what will
// be signed.
func TestIdentityAssertionAdaptedJSON(t *testing.T) {
	for options, want := range map[string]string{
		"":                      "",
		"identity_assertion on": `"identity_assertion":{"audience":"http://127.0.0.1:9080"}`,
		"identity_assertion on {\n\t\taudience https://legacy.example\n\t}": `"identity_assertion":{"audience":"https://legacy.example"}`,
	} {
		cfg := "http://127.0.0.1:8080 {\n\tschool_gateway http://127.0.0.1:9080 {\n\t" + options + "\n\t}\n}\n"
		raw, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg), nil)
		if err != nil {
			t.Fatalf("%q: %v", options, err)
		}
		if got := strings.Contains(string(raw), `"identity_assertion"`); got != (want != "") || !strings.Contains(string(raw), want) {
			t.Errorf("%q: adapted config %s, want %s", options, raw, want)
		}
	}
}

// testSite is a provisioned site without Caddy: its authorization server
// on a bbolt store, and an access token minted straight into the store.
type testSite struct {
	g        *Gateway
	token    string
	as       *authserver.Server
	upstream *recordingNext
}

// recordingNext stands for the reverse proxy: it keeps what would be
// forwarded.
type recordingNext struct {
	header     http.Header
	assertions map[string]bool // distinct assertions seen: ES256 signatures are randomized, so one per signature
}

func (n *recordingNext) ServeHTTP(_ http.ResponseWriter, r *http.Request) error {
	n.header = r.Header
	if a := r.Header.Get(assertionHeader); a != "" {
		n.assertions[a] = true
	}
	return nil
}

func newTestSite(tb testing.TB, assertion *IdentityAssertion) *testSite {
	tb.Helper()
	store, err := authserver.OpenBolt(filepath.Join(tb.TempDir(), "school.db"), time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	g := &Gateway{Upstream: "http://127.0.0.1:9080", Issuer: "https://school.example", IdentityAssertion: assertion}
	g.setDefaults()
	if err := g.Validate(); err != nil {
		tb.Fatal(err)
	}
	as, err := authserver.New(context.Background(), authserver.Config{Issuer: g.Issuer, SessionURL: g.upstreamURL(g.SessionURL)}, store)
	if err != nil {
		tb.Fatal(err)
	}
	g.site = &site{gateway: g, as: as, store: store, policy: &policy.Policy{AdminPrefix: g.AdminPrefix},
		observe: newObserverRef(newSiteObserver(metricsFor(nil), g.Issuer)), assertionAudience: g.assertionAudience()}
	return &testSite{g: g, as: as, token: mintMemberToken(tb, store, g.Issuer),
		upstream: &recordingNext{assertions: map[string]bool{}}}
}

// mintMemberToken stores a member grant and access token as a code
// exchange would.
func mintMemberToken(tb testing.TB, store authserver.Store, origin string) string {
	tb.Helper()
	hash := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	raw := "sgat_" + strings.Repeat("t", 43)
	now := time.Now()
	if err := store.PutCode(context.Background(), hash("code"), &authserver.Code{ExpiresAt: now.Add(time.Minute)}); err != nil {
		tb.Fatal(err)
	}
	err := store.RedeemCode(context.Background(), hash("code"), func(*authserver.Code) (*authserver.Grant, []authserver.IssuedToken, error) {
		g := &authserver.Grant{ID: "grant-1", ClientID: "member-app", Audience: authserver.AudienceMember,
			Scopes: []string{"openid", "account:read"}, Resource: origin, CreatedAt: now,
			Identity: authserver.Identity{Subject: "member-1", Email: "student@demo.school", Name: "Sam",
				OrgID: "demo", Roles: []string{"student"}}}
		return g, []authserver.IssuedToken{{Hash: hash(raw), Token: &authserver.Token{Kind: authserver.TokenAccess,
			GrantID: g.ID, ClientID: g.ClientID, Scopes: g.Scopes, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}}}, nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

func (ts *testSite) serve(tb testing.TB, r *http.Request) *httptest.ResponseRecorder {
	tb.Helper()
	ts.upstream.header = nil
	rec := httptest.NewRecorder()
	if err := ts.g.ServeHTTP(rec, r, ts.upstream); err != nil {
		tb.Fatal(err)
	}
	return rec
}

// A client's own X-School-Assertion never reaches the legacy server, in
// any spelling, on protected and pass-through paths, with the option on
// or off; with it on, the only assertion forwarded is the gateway's.
func TestClientAssertionIsStripped(t *testing.T) {
	for _, on := range []bool{false, true} {
		var opt *IdentityAssertion
		if on {
			opt = &IdentityAssertion{}
		}
		ts := newTestSite(t, opt)
		for _, path := range []string{"/account/graphql", "/courses/x"} {
			for _, name := range []string{"X-School-Assertion", "x-school-assertion", "X-SCHOOL-ASSERTION"} {
				r := httptest.NewRequest("POST", path, strings.NewReader(`{"query":"{ viewer { id } }"}`))
				r.Header["Authorization"] = []string{"Bearer " + ts.token}
				r.Header[name] = []string{"forged.forged.forged"}
				rec := ts.serve(t, r)
				if ts.upstream.header == nil {
					t.Fatalf("on=%v %s: not forwarded: %d %s", on, path, rec.Code, rec.Body)
				}
				var got []string
				for k, v := range ts.upstream.header {
					if strings.EqualFold(k, assertionHeader) {
						got = append(got, v...)
					}
				}
				wantGateway := on && path == "/account/graphql"
				switch {
				case !wantGateway && len(got) != 0:
					t.Errorf("on=%v %s %s: forwarded %q", on, path, name, got)
				case wantGateway && (len(got) != 1 || got[0] == "forged.forged.forged"):
					t.Errorf("on=%v %s %s: forwarded %q, want only the gateway's assertion", on, path, name, got)
				}
			}
		}
	}
}

// With the option on, the forwarded request carries a valid assertion
// beside the plain headers; the same token's next request reuses it.
func TestProtectedRequestCarriesAssertion(t *testing.T) {
	ts := newTestSite(t, &IdentityAssertion{})
	request := func() http.Header {
		r := httptest.NewRequest("POST", "/account/graphql", nil)
		r.Header.Set("Authorization", "Bearer "+ts.token)
		if rec := ts.serve(t, r); ts.upstream.header == nil {
			t.Fatalf("not forwarded: %d %s", rec.Code, rec.Body)
		}
		return ts.upstream.header
	}
	h := request()
	if h.Get("X-School-Subject") != "member-1" || h.Get("X-School-Audience") != "member" {
		t.Errorf("plain identity headers missing: %v", h)
	}
	jwks, err := ts.as.Keys().JWKS(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	set, err := jwk.Parse(jwks)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.ParseString(h.Get(assertionHeader), jwt.WithKeySet(set), jwt.WithIssuer("https://school.example"),
		jwt.WithAudience("http://127.0.0.1:9080"))
	if err != nil {
		t.Fatalf("assertion: %v", err)
	}
	if sub, _ := tok.Subject(); sub != "member-1" {
		t.Errorf("sub %q", sub)
	}
	first := h.Get(assertionHeader)
	if request().Get(assertionHeader) != first {
		t.Error("the second request of the same token was signed again")
	}
}

// The MCP member tools call the Account API themselves: that call carries
// the identity headers of the MCP request's token and, with the option
// on, its assertion; without a validated token it is not made at all.
func TestAccountQueryCarriesAssertion(t *testing.T) {
	var got http.Header
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		_, _ = w.Write([]byte(`{"data":{}}`))
	}))
	defer upstream.Close()
	for _, on := range []bool{false, true} {
		var opt *IdentityAssertion
		if on {
			opt = &IdentityAssertion{Audience: "http://legacy.internal"}
		}
		ts := newTestSite(t, opt)
		s := ts.g.site
		s.gateway.Upstream, s.upstream = upstream.URL, upstream.Client()
		tok, err := ts.as.LookupAccessToken(t.Context(), ts.token)
		if err != nil {
			t.Fatal(err)
		}
		got = nil
		if _, err := s.accountQuery(t.Context(), tok, "{ viewer { id } }", nil); err != nil {
			t.Fatalf("on=%v: %v", on, err)
		}
		want, _ := ts.as.IdentityAssertion(tok, "http://legacy.internal")
		if a := got.Get(assertionHeader); (a != "") != on || (on && a != want) {
			t.Errorf("on=%v: assertion %q, want the token's cached one: %v", on, a, on)
		}
		if got.Get("X-School-Subject") != "member-1" || got.Get("X-School-Audience") != "member" {
			t.Errorf("on=%v: identity headers %v", on, got)
		}
		got = nil
		_, err = s.accountQuery(t.Context(), nil, "{ viewer { id } }", nil)
		if err == nil || got != nil {
			t.Errorf("without a validated token the call must fail closed: %v, upstream saw %v", err, got)
		}
	}
}
