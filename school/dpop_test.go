package school

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/dpopclient"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/schooltest"
	"github.com/schoolgate/schoolgate/store"
)

var dpopKey = dpopclient.MustKey("ES256")

// mintBoundToken stores the student's grant "grant-dpop" and an access
// token of it bound to k, as a code exchange with a proof of k would.
func mintBoundToken(tb testing.TB, st store.Store, k *dpopclient.Key) string {
	return schooltest.MemberToken(tb, st, testIssuer, "grant-dpop", k.JKT)
}

// dpopRequest is a request to path with a DPoP-bound token and a proof
// for htu (empty: the request's own URL).
func dpopRequest(method, path, token, htu string, k *dpopclient.Key) *http.Request {
	r := httptest.NewRequest(method, testIssuer+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Authorization", "DPoP "+token)
	if htu == "" {
		htu = testIssuer + path
	}
	r.Header.Set("DPoP", k.Proof(method, htu, token, time.Now()))
	return r
}

// A DPoP-bound token reaches every protected resource with a proof of its
// key, and the legacy server sees neither the token nor the proof; the
// canonical path decides what htu names, as it decides what the policy
// judges.
func TestDPoPProtected(t *testing.T) {
	ts := newTestSite(t)
	tok := mintBoundToken(t, ts.store, dpopKey)
	for _, tc := range []struct {
		name, path, htu string
	}{
		{"Account API", "/account/graphql", ""},
		{"another spelling, proved as sent", "/account/%67raphql", ""},
		{"another spelling, proved canonical", "/account/./graphql", testIssuer + "/account/graphql"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := ts.serve(t, dpopRequest("POST", tc.path, tok, tc.htu, dpopKey))
			h := ts.upstream.header
			if h == nil {
				t.Fatalf("not forwarded: %d %s %q", rec.Code, rec.Body, rec.Header().Values("WWW-Authenticate"))
			}
			if h.Get("Authorization") != "" || h.Get("DPoP") != "" || h.Get("X-School-Subject") != "member-1" {
				t.Errorf("forwarded headers %v", h)
			}
		})
	}
	clear(ts.observed.counts)
	rec := ts.serve(t, dpopRequest("POST", "/mcp", tok, "", dpopKey))
	if rec.Code >= 400 || ts.observed.counts["mcp member"] != 1 {
		t.Errorf("/mcp with a DPoP token: %d %s, counted %v", rec.Code, rec.Body, ts.observed.counts)
	}
}

// Refusals at the protected resources, each a 401 with the DPoP challenge
// (algs, resource_metadata) beside the Bearer one, nothing forwarded.
func TestDPoPProtectedRefusals(t *testing.T) {
	ts := newTestSite(t)
	tok := mintBoundToken(t, ts.store, dpopKey)
	asBearer := dpopRequest("POST", "/account/graphql", tok, "", dpopKey)
	asBearer.Header.Set("Authorization", "Bearer "+tok)
	bearerAsDPoP := dpopRequest("POST", "/account/graphql", ts.token, "", dpopKey)
	for name, r := range map[string]*http.Request{
		"a bound token as Bearer":        asBearer,
		"a bearer token as DPoP":         bearerAsDPoP,
		"another key's proof":            dpopRequest("POST", "/account/graphql", tok, "", dpopclient.MustKey("ES256")),
		"a proof for /mcp":               dpopRequest("POST", "/account/graphql", tok, testIssuer+"/mcp", dpopKey),
		"a proof for another spelling":   dpopRequest("POST", "/account/graphql", tok, testIssuer+"/account/graphql/", dpopKey),
		"a proof for the MCP at account": dpopRequest("POST", "/mcp", tok, testIssuer+"/account/graphql", dpopKey),
	} {
		t.Run(name, func(t *testing.T) {
			rec := ts.serve(t, r)
			if rec.Code != http.StatusUnauthorized || ts.upstream.header != nil {
				t.Fatalf("%d %s, forwarded %v", rec.Code, rec.Body, ts.upstream.header != nil)
			}
			values := rec.Header().Values("WWW-Authenticate")
			if len(values) != 2 || !strings.HasPrefix(values[0], "Bearer") {
				t.Fatalf("WWW-Authenticate %q, want Bearer then DPoP", values)
			}
			p, err := policy.ParseSchemeChallenge(policy.SchemeDPoP, values[1])
			if err != nil || p["algs"] == "" || p["resource_metadata"] != testIssuer+"/.well-known/oauth-protected-resource" {
				t.Errorf("DPoP challenge %q: %v", values[1], err)
			}
		})
	}
}

// Pass-through requests do not carry a DPoP credential or proof to the
// legacy server either.
func TestDPoPStrippedOnPassThrough(t *testing.T) {
	ts := newTestSite(t)
	r := dpopRequest("GET", "/courses/light", "sgat_x", "", dpopKey)
	ts.serve(t, r)
	h := ts.upstream.header
	if h == nil || h.Get("Authorization") != "" || h.Get("DPoP") != "" {
		t.Errorf("forwarded %v", h)
	}
}

// BenchmarkProtectedDPoP is BenchmarkProtectedRequest with a DPoP-bound
// token: each request a new proof (made before the timer), verified.
func BenchmarkProtectedDPoP(b *testing.B) {
	for _, alg := range []string{"ES256", "EdDSA", "RS256"} {
		b.Run(alg, func(b *testing.B) {
			ts := newTestSite(b, func(c *Config) { c.Observer = nil })
			k := dpopclient.MustKey(alg)
			tok := mintBoundToken(b, ts.store, k)
			proofs := make([]string, b.N+1)
			for i := range proofs {
				proofs[i] = k.Proof("POST", testIssuer+"/account/graphql", tok, time.Now())
			}
			r := httptest.NewRequest("POST", "/account/graphql", nil)
			auth := []string{"DPoP " + tok}
			w := httptest.NewRecorder()
			serve := func(i int) {
				r.Header["Authorization"] = auth
				r.Header["Dpop"] = proofs[i : i+1]
				_ = ts.Serve(w, r, ts.upstream)
			}
			serve(b.N)
			if ts.upstream.header == nil {
				b.Fatalf("not forwarded: %d", w.Code)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				serve(i)
			}
		})
	}
}

// A school that requires DPoP says so in /auth.md, /openapi.json and its
// protected-resource metadata, and refuses a bearer token at its
// resources with the DPoP challenge alone.
func TestDPoPRequiredDocuments(t *testing.T) {
	ts := newTestSite(t, func(c *Config) { c.DPoP = policy.DPoPRequired })
	for path, want := range map[string]string{
		"/auth.md":                              "**DPoP-bound tokens only**",
		"/openapi.json":                         "This school issues DPoP-bound tokens only",
		"/.well-known/oauth-protected-resource": `"dpop_bound_access_tokens_required":true`,
	} {
		rec := ts.serve(t, httptest.NewRequest("GET", testIssuer+path, nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: %d, want %q in it", path, rec.Code, want)
		}
	}
	r := httptest.NewRequest("POST", testIssuer+"/account/graphql", nil)
	r.Header.Set("Authorization", "Bearer "+ts.token)
	rec := ts.serve(t, r)
	values := rec.Header().Values("WWW-Authenticate")
	if rec.Code != 401 || len(values) != 1 || !strings.HasPrefix(values[0], "DPoP ") {
		t.Errorf("a bearer token: %d %q", rec.Code, values)
	}
}
