package authserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/schooltest"
	"github.com/schoolgate/schoolgate/sitepath"
)

// traced runs a request under a parent span of an in-memory tracer, as
// Caddy's tracing handler puts one in the request's context.
func traced(f *fixture, tp trace.TracerProvider, req *http.Request) (*httptest.ResponseRecorder, trace.SpanContext) {
	ctx, parent := tp.Tracer("caddy").Start(req.Context(), "caddy request")
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req.WithContext(ctx))
	parent.End()
	return rec, parent.SpanContext()
}

// The spans of a code exchange, a refused one and a protected request:
// their names, parents and attributes; nothing secret in any attribute.
func TestTraceSpans(t *testing.T) {
	f := newFixture(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	v, c := pkce()
	code := f.code(authParams(c), v)
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {memberRedirect}, "client_id": {memberClient}, "code_verifier": {v}, "resource": {issuer}}
	tokenReq := func() *http.Request {
		r := httptest.NewRequest("POST", sitepath.Token, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return r
	}
	rec, parent := traced(f, tp, tokenReq())
	if rec.Code != 200 {
		t.Fatalf("exchange: %d %s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	spans := exp.GetSpans()
	tok := schooltest.SpanNamed(t, spans, "oauth token")
	if tok.Parent.SpanID() != parent.SpanID() || tok.SpanKind != trace.SpanKindInternal {
		t.Errorf("oauth token's parent %v kind %v, want the request's span %v", tok.Parent.SpanID(), tok.SpanKind, parent.SpanID())
	}
	want := map[string]string{"schoolgate.school": issuer, "oauth.grant_type": "authorization_code",
		"oauth.client_id": memberClient, "schoolgate.outcome": "issued"}
	checkAttrs(t, tok, want)
	commit := schooltest.SpanNamed(t, spans, "schoolgate store commit")
	if commit.Parent.SpanID() != tok.SpanContext.SpanID() {
		t.Errorf("the store's commit is not a child of oauth token")
	}
	checkAttrs(t, commit, map[string]string{"db.system.name": "bbolt", "schoolgate.store.group_commit_size": "1"})

	// A protected request's token validation: a miss, then a hit.
	at := between(body, `"access_token":"`, `"`)
	rt := between(body, `"refresh_token":"`, `"`)
	exp.Reset()
	for range 2 {
		ctx, p := tp.Tracer("caddy").Start(context.Background(), "caddy request")
		r := httptest.NewRequest("GET", issuer+"/account/graphql", nil).WithContext(ctx)
		r.Header.Set("Authorization", "Bearer "+at)
		f.srv.cache.purge()
		if _, ch := f.srv.Guard().Check(nil, r, policy.Requirement{}); ch != nil {
			t.Fatalf("check: %+v", ch)
		}
		f.srv.Guard().Check(nil, r, policy.Requirement{}) // from the cache
		p.End()
	}
	var hits, misses int
	for _, s := range exp.GetSpans() {
		if s.Name != "schoolgate token validation" {
			continue
		}
		if s.Parent.SpanID() == (trace.SpanID{}) {
			t.Errorf("a validation span without parent")
		}
		for _, a := range s.Attributes {
			if a.Key == AttrCacheHit {
				if a.Value.AsBool() {
					hits++
				} else {
					misses++
				}
			}
		}
		checkAttrs(t, s, map[string]string{"oauth.client_id": memberClient})
	}
	if hits != 2 || misses != 2 {
		t.Errorf("validations: %d hits, %d misses; want 2 and 2", hits, misses)
	}

	exp.Reset()
	rec, _ = traced(f, tp, tokenReq()) // the same code again: replayed
	if rec.Code != 400 {
		t.Fatalf("replay: %d", rec.Code)
	}
	checkAttrs(t, schooltest.SpanNamed(t, exp.GetSpans(), "oauth token"), map[string]string{"schoolgate.outcome": "refused", "oauth.error": "invalid_grant"})

	// Nothing of the run's secrets in any attribute of any span.
	secrets := []string{code, v, at, rt, "student@demo.school", portalSecret}
	exp.Reset()
	traced(f, tp, tokenReq())
	for _, s := range append(spans, exp.GetSpans()...) {
		for _, a := range s.Attributes {
			for _, sec := range secrets {
				if sec != "" && strings.Contains(a.Value.Emit(), sec) {
					t.Errorf("span %q attribute %s holds a secret", s.Name, a.Key)
				}
			}
		}
	}
}

// Without a span in the request (tracing off), none is started.
func TestTraceOff(t *testing.T) {
	f := newFixture(t)
	exp := tracetest.NewInMemoryExporter()
	_ = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	f.tokens()
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d spans without tracing", n)
	}
}

func checkAttrs(t *testing.T, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, a := range s.Attributes {
		got[string(a.Key)] = a.Value.Emit()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %q, want %q (all: %v)", s.Name, k, got[k], v, got)
		}
	}
}

func between(s, from, to string) string {
	_, after, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, to)
	return v
}
