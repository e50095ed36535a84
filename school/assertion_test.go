package school

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/schoolgate/schoolgate/policy"
)

// withAssertion turns the identity assertion on for audience, off for "".
func withAssertion(audience string) func(*Config) {
	return func(c *Config) {
		c.IdentityAssertion = nil
		if audience != "" {
			c.IdentityAssertion = &IdentityAssertion{Audience: audience}
		}
	}
}

// A client's own X-School-Assertion never reaches the legacy server, in
// any spelling, on protected and pass-through paths, with the option on
// or off; with it on, the only assertion forwarded is the gateway's.
func TestClientAssertionIsStripped(t *testing.T) {
	for _, on := range []bool{false, true} {
		audience := ""
		if on {
			audience = "http://127.0.0.1:9080"
		}
		ts := newTestSite(t, withAssertion(audience))
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
					if strings.EqualFold(k, AssertionHeader) {
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
	ts := newTestSite(t, withAssertion("http://127.0.0.1:9080"))
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
	jwks, err := ts.Auth().Keys().JWKS(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	set, err := jwk.Parse(jwks)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.ParseString(h.Get(AssertionHeader), jwt.WithKeySet(set), jwt.WithIssuer(testIssuer),
		jwt.WithAudience("http://127.0.0.1:9080"))
	if err != nil {
		t.Fatalf("assertion: %v", err)
	}
	if sub, _ := tok.Subject(); sub != "member-1" {
		t.Errorf("sub %q", sub)
	}
	first := h.Get(AssertionHeader)
	if request().Get(AssertionHeader) != first {
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
		audience := ""
		if on {
			audience = "http://legacy.internal"
		}
		ts := newTestSite(t, withAssertion(audience), func(c *Config) {
			c.Upstream, c.Client = upstream.URL, upstream.Client()
		})
		tok, err := ts.Auth().LookupAccessToken(t.Context(), ts.token)
		if err != nil {
			t.Fatal(err)
		}
		got = nil
		if _, err := ts.accountQuery(t.Context(), tok, "{ viewer { id } }", nil); err != nil {
			t.Fatalf("on=%v: %v", on, err)
		}
		want, _ := ts.Auth().IdentityAssertion(tok, "http://legacy.internal")
		if a := got.Get(AssertionHeader); (a != "") != on || (on && a != want) {
			t.Errorf("on=%v: assertion %q, want the token's cached one: %v", on, a, on)
		}
		if got.Get("X-School-Subject") != "member-1" || got.Get("X-School-Audience") != "member" {
			t.Errorf("on=%v: identity headers %v", on, got)
		}
		got = nil
		_, err = ts.accountQuery(t.Context(), nil, "{ viewer { id } }", nil)
		if err == nil || got != nil {
			t.Errorf("without a validated token the call must fail closed: %v, upstream saw %v", err, got)
		}
	}
}

// schoolHeaders are the X-School-* headers of h, the assertion included.
func schoolHeaders(h http.Header) []string {
	var out []string
	for k := range h {
		if len(k) >= 9 && strings.EqualFold(k[:9], "X-School-") {
			out = append(out, k)
		}
	}
	return out
}

// With AssertionOnly a protected request reaches the legacy server with
// the gateway's assertion and no other X-School-* header: not the plain
// identity headers, nor any a client sent.
func TestAssertionOnlyForwardsTheAssertionAlone(t *testing.T) {
	ts := newTestSite(t, withAssertion("http://127.0.0.1:9080"), func(c *Config) { c.IdentityHeaders = IdentityHeadersAssertion })
	r := httptest.NewRequest("POST", "/account/graphql", nil)
	r.Header.Set("Authorization", "Bearer "+ts.token)
	r.Header.Set("X-School-Subject", "forged")
	r.Header.Set("X-School-Audience", "operator")
	r.Header["x-school-roles"] = []string{"admin"}
	r.Header.Set(AssertionHeader, "forged.forged.forged")
	if rec := ts.serve(t, r); ts.upstream.header == nil {
		t.Fatalf("not forwarded: %d %s", rec.Code, rec.Body)
	}
	h := ts.upstream.header
	if got := schoolHeaders(h); len(got) != 1 || got[0] != AssertionHeader {
		t.Fatalf("X-School-* headers forwarded: %q, want only %s", got, AssertionHeader)
	}
	want, err := ts.Auth().IdentityAssertion(mustLookup(t, ts), "http://127.0.0.1:9080")
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Values(AssertionHeader); len(got) != 1 || got[0] != want {
		t.Errorf("assertion %q, want the gateway's %q", got, want)
	}
}

// With AssertionOnly, a protected request on a warm validation cache
// allocates once in the gateway: the assertion's header value. It
// computes none of the eight identity values (Identified works them out
// when asked, and they are still right), parses no query it does not
// have, and copies no token to hash it.
func TestAssertionOnlyRequestAllocatesOnce(t *testing.T) {
	var id Identity
	ts := newTestSite(t, withAssertion("http://127.0.0.1:9080"), func(c *Config) {
		c.IdentityHeaders, c.Observer = IdentityHeadersAssertion, nil
		c.Identified = func(_ *http.Request, got Identity) { id = got }
	})
	r := httptest.NewRequest("POST", "/account/graphql", nil)
	auth := []string{"Bearer " + ts.token}
	w := httptest.NewRecorder()
	serve := func() {
		// The gateway removed the token; the assertion it set is stripped
		// again on entry, as a client's would be.
		r.Header["Authorization"] = auth
		if err := ts.Serve(w, r, ts.upstream); err != nil {
			t.Fatal(err)
		}
	}
	serve() // validates the token and signs its assertion
	if allocs := testing.AllocsPerRun(100, serve); allocs > 1 {
		t.Errorf("%v allocations per protected request, want 1", allocs)
	}
	if got := schoolHeaders(ts.upstream.header); len(got) != 1 || got[0] != AssertionHeader {
		t.Fatalf("X-School-* headers forwarded: %q, want only %s", got, AssertionHeader)
	}
	want := []string{"member-1", "student@demo.school", "Sam Student", "demo", "student", "openid account:read", "member-app", "member"}
	for i, h := range IdentityHeaders {
		if got := id.Value(i); got != want[i] {
			t.Errorf("Identified's %s = %q, want %q", h, got, want[i])
		}
	}
}

// The MCP member tools' Account API call carries the assertion alone too.
func TestAssertionOnlyAccountQuery(t *testing.T) {
	var got http.Header
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		_, _ = w.Write([]byte(`{"data":{}}`))
	}))
	defer upstream.Close()
	ts := newTestSite(t, withAssertion("http://legacy.internal"), func(c *Config) {
		c.Upstream, c.Client, c.IdentityHeaders = upstream.URL, upstream.Client(), IdentityHeadersAssertion
	})
	if _, err := ts.accountQuery(t.Context(), mustLookup(t, ts), "{ viewer { id } }", nil); err != nil {
		t.Fatal(err)
	}
	if names := schoolHeaders(got); len(names) != 1 || names[0] != AssertionHeader || got.Get(AssertionHeader) == "" {
		t.Errorf("X-School-* headers sent: %q, want only %s", names, AssertionHeader)
	}
}

// AssertionOnly without the assertion would forward no identity at all:
// the school is not built.
func TestAssertionOnlyRequiresAssertion(t *testing.T) {
	cfg := testConfig(openStore(t))
	cfg.IdentityHeaders = IdentityHeadersAssertion
	if _, err := New(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "identity_headers assertion: requires identity_assertion on") {
		t.Errorf("New: %v", err)
	}
}

func mustLookup(t *testing.T, ts *testSite) *policy.Token {
	t.Helper()
	tok, err := ts.Auth().LookupAccessToken(t.Context(), ts.token)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
