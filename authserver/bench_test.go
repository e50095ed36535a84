package authserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// BenchmarkLookupAccessToken measures the protected-resource hot path.
func BenchmarkLookupAccessToken(b *testing.B) {
	f := newFixture(b)
	raw := f.tokens()["access_token"].(string)
	ctx := context.Background()
	b.Run("cache-hit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f.srv.LookupAccessToken(ctx, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cache-miss", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f.srv.cache.lru.Purge()
			if _, err := f.srv.LookupAccessToken(ctx, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unknown", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = f.srv.LookupAccessToken(ctx, "sgat_unknownunknownunknownunknownunknown")
		}
	})
}

// BenchmarkCodeExchange measures authorization-code redemption including
// the durable write and the ID token signature; codes are minted outside
// the timer.
func BenchmarkCodeExchange(b *testing.B) {
	f := newFixture(b)
	type pair struct{ code, verifier string }
	for b.Loop() {
		b.StopTimer()
		v, c := pkce()
		p := pair{f.code(authParams(c), v), v}
		b.StartTimer()
		if status, m := f.exchange(p.code, p.verifier); status != 200 {
			b.Fatalf("exchange: %d %v", status, m)
		}
	}
}

// BenchmarkRefresh measures refresh-token rotation (one durable write).
func BenchmarkRefresh(b *testing.B) {
	f := newFixture(b)
	rt := f.tokens()["refresh_token"].(string)
	for b.Loop() {
		status, m := f.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {memberClient}})
		if status != 200 {
			b.Fatalf("refresh: %d %v", status, m)
		}
		rt = m["refresh_token"].(string)
	}
}

// discardWriter is a ResponseWriter that keeps nothing but its header
// map, which a benchmark clears between requests.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkDispatch measures ServeHTTP on answers that do little beyond
// finding their route (limits off): what the route lookup costs every
// request.
func BenchmarkDispatch(b *testing.B) {
	f := newFixture(b)
	f.srv.limits = newLimiters(RateLimits{})
	for _, c := range []struct{ name, method, path string }{
		{"token-get", http.MethodGet, sitepath.Token},
		{"register-get", http.MethodGet, sitepath.Register},
		{"jwks-post", http.MethodPost, sitepath.JWKS},
		{"preflight", http.MethodOptions, sitepath.Introspect},
		{"unknown", http.MethodGet, "/api/oauth/unknown"},
		{"asset-head", http.MethodHead, sitepath.Assets + "pages-0123456789ab.css"},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest(c.method, c.path, nil)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				f.srv.ServeHTTP(w, r)
			}
		})
	}
}

// statusWriter is a discardWriter that keeps the status.
type statusWriter struct {
	discardWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) { s.status = code }

// BenchmarkTokenCPU measures the CPU of the token endpoint's answers: the
// store does not sync its file (the fsync is the disk's time, which
// BenchmarkCodeExchange includes), limits are off, and codes, refresh
// tokens and requests are made outside the timer.
func BenchmarkTokenCPU(b *testing.B) { benchTokenCPU(b, context.Background()) }

// benchTokenCPU is BenchmarkTokenCPU with the requests' context ctx.
func benchTokenCPU(b *testing.B, ctx context.Context) {
	f := newFixture(b)
	f.srv.limits = newLimiters(RateLimits{})
	if err := boltstore.NoSync(f.store); err != nil {
		b.Fatal(err)
	}
	w := &statusWriter{discardWriter: discardWriter{h: http.Header{}}}
	serve := func(b *testing.B, form url.Values) {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, sitepath.Token, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		clear(w.h)
		w.status = 0
		b.StartTimer()
		f.srv.ServeHTTP(w, r)
		b.StopTimer()
		if w.status != 0 && w.status != http.StatusOK {
			b.Fatalf("token endpoint: %d", w.status)
		}
	}
	b.Run("code-exchange", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			v, c := pkce()
			code := f.code(authParams(c), v)
			serve(b, url.Values{"grant_type": {"authorization_code"}, "code": {code},
				"redirect_uri": {memberRedirect}, "client_id": {memberClient}, "code_verifier": {v},
				"resource": {issuer}})
			b.StartTimer()
		}
	})
	b.Run("refresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			rt := f.tokens()["refresh_token"].(string)
			serve(b, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {memberClient}})
			b.StartTimer()
		}
	})
}

// BenchmarkDocuments measures the discovery document and the JWKS, which
// clients fetch before they authorize and verify.
func BenchmarkDocuments(b *testing.B) {
	f := newFixture(b)
	f.srv.limits = newLimiters(RateLimits{})
	for _, path := range []string{sitepath.OIDCConfig, sitepath.JWKS} {
		b.Run(strings.TrimPrefix(path, "/"), func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				f.srv.ServeHTTP(w, r)
			}
		})
	}
}

// BenchmarkIDToken measures what an exchange adds for its ID token: the
// claims encoded and signed.
func BenchmarkIDToken(b *testing.B) {
	f := newFixture(b)
	now := f.clock.Now()
	g := &store.Grant{ID: "grant-1", ClientID: memberClient, Scopes: []string{"openid", "profile", "email"},
		Identity: store.Identity{Subject: "member-1", Email: "student@demo.school", Name: "Sam Student",
			OrgID: "demo", Roles: []string{"student"}}, AuthTime: now}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.srv.idToken(g, "n-456", now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckResource measures RFC 8707's check of the resource a
// token request names, spelled as the issuer (what clients send) and
// otherwise.
func BenchmarkCheckResource(b *testing.B) {
	f := newFixture(b)
	for _, c := range []struct{ name, resource string }{{"issuer", issuer}, {"slash", issuer + "/"}} {
		b.Run(c.name, func(b *testing.B) {
			values := []string{c.resource}
			b.ReportAllocs()
			for b.Loop() {
				if _, e := f.srv.checkResource(values, store.AudienceMember); e != nil {
					b.Fatal(e)
				}
			}
		})
	}
}
