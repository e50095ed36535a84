package school

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/schoolgate/schoolgate/admission"
	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/schooltest"
)

// A protected request under Caddy's request span: the token's validation
// and the call to the legacy server are its children, and the request
// sent on carries the call span's traceparent; so does an MCP tool's
// Account API call. Nothing secret in any attribute.
func TestTraceLegacyCalls(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	var got http.Header
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		_, _ = w.Write([]byte(`{"data":{}}`))
	}))
	defer upstream.Close()
	ts := newTestSite(t, func(c *Config) { c.Upstream, c.Client = upstream.URL, upstream.Client() })

	ctx, parent := tp.Tracer("caddy").Start(context.Background(), "caddy request")
	r := httptest.NewRequest("POST", testIssuer+"/account/graphql", strings.NewReader(`{"query":"{ viewer { id } }"}`)).WithContext(ctx)
	r.Header.Set("Authorization", "Bearer "+ts.token)
	r.Header.Set("Content-Type", "application/json")
	if rec := ts.serve(t, r); rec.Code != 0 && rec.Code != http.StatusOK {
		t.Fatalf("protected request: %d %s", rec.Code, rec.Body)
	}
	parent.End()
	spans := exp.GetSpans()
	call := schooltest.SpanNamed(t, spans, "schoolgate legacy call")
	validation := schooltest.SpanNamed(t, spans, "schoolgate token validation")
	for _, s := range []tracetest.SpanStub{call, validation} {
		if s.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s's parent %v, want the request's span", s.Name, s.Parent.SpanID())
		}
	}
	if call.SpanKind != trace.SpanKindClient {
		t.Errorf("legacy call kind %v", call.SpanKind)
	}
	want := "00-" + call.SpanContext.TraceID().String() + "-" + call.SpanContext.SpanID().String() + "-01"
	if tp := ts.upstream.header.Get("Traceparent"); tp != want {
		t.Errorf("the request sent on carries traceparent %q, want the call span's %q", tp, want)
	}

	exp.Reset()
	ctx, parent = tp.Tracer("caddy").Start(context.Background(), "caddy request")
	if _, err := ts.accountQuery(ctx, mustLookup(t, ts), "{ viewer { id } }", nil); err != nil {
		t.Fatal(err)
	}
	parent.End()
	own := schooltest.SpanNamed(t, exp.GetSpans(), "schoolgate legacy call")
	want = "00-" + own.SpanContext.TraceID().String() + "-" + own.SpanContext.SpanID().String() + "-01"
	if got.Get("Traceparent") != want || own.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("the Account API call carries traceparent %q, want %q", got.Get("Traceparent"), want)
	}
	for _, s := range append(spans, exp.GetSpans()...) {
		for _, a := range s.Attributes {
			if strings.Contains(a.Value.Emit(), ts.token) || strings.Contains(a.Value.Emit(), "@") {
				t.Errorf("span %q attribute %s holds a secret or an e-mail", s.Name, a.Key)
			}
		}
	}

	// Tracing off: no traceparent is added.
	r = httptest.NewRequest("GET", testIssuer+"/account/graphql", nil)
	r.Header.Set("Authorization", "Bearer "+ts.token)
	ts.serve(t, r)
	if v := ts.upstream.header.Get("Traceparent"); v != "" {
		t.Errorf("traceparent %q without tracing", v)
	}
}

// The admission span: a child of the request's span naming the school,
// how long the request waited and its outcome; a refusal is its cause
// and the span's error status.
func TestTraceAdmission(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	traced := func(t *testing.T, ts *testSite) (tracetest.SpanStub, trace.SpanContext, int) {
		t.Helper()
		exp.Reset()
		ctx, parent := tp.Tracer("caddy").Start(context.Background(), "caddy request")
		rec := ts.serve(t, httptest.NewRequest("GET", "/courses/light", nil).WithContext(ctx))
		parent.End()
		return schooltest.SpanNamed(t, exp.GetSpans(), "schoolgate admission"), parent.SpanContext(), rec.Code
	}
	attrs := func(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
		m := map[attribute.Key]attribute.Value{}
		for _, a := range s.Attributes {
			m[a.Key] = a.Value
		}
		return m
	}

	t.Run("admitted", func(t *testing.T) {
		g := admission.NewGate(admission.Options{Concurrency: 4})
		mine, other := g.School(1), g.School(1)
		ts := newTestSite(t, func(cfg *Config) { cfg.Admission = mine })
		sl, _ := other.Admit(context.Background()) // the instance is shared: slots count
		defer sl.Release()
		span, parent, _ := traced(t, ts)
		a := attrs(span)
		if span.Parent.SpanID() != parent.SpanID() || span.SpanKind != trace.SpanKindInternal {
			t.Errorf("parent %v kind %v, want the request's span, internal", span.Parent.SpanID(), span.SpanKind)
		}
		if a[authserver.AttrSchool].AsString() != testIssuer || a[authserver.AttrOutcome].AsString() != "admitted" {
			t.Errorf("attributes %v", span.Attributes)
		}
		if w, ok := a[attrWaited]; !ok || w.Type() != attribute.FLOAT64 || w.AsFloat64() < 0 {
			t.Errorf("waited %v (set: %v)", w.Emit(), ok)
		}
		if _, ok := a[attrRefusal]; ok || span.Status.Code != codes.Unset {
			t.Errorf("an admitted request's span has a refusal: %v, status %v", a[attrRefusal].Emit(), span.Status)
		}
	})

	t.Run("refused", func(t *testing.T) {
		ts, release := busyGate(t, func(h *admission.School) *testSite {
			return newTestSite(t, func(cfg *Config) { cfg.Admission = h })
		})
		defer release()
		span, parent, code := traced(t, ts)
		a := attrs(span)
		if code != http.StatusServiceUnavailable {
			t.Fatalf("the busy school answered %d", code)
		}
		if span.Parent.SpanID() != parent.SpanID() {
			t.Errorf("parent %v, want the request's span", span.Parent.SpanID())
		}
		if a[authserver.AttrSchool].AsString() != testIssuer || a[authserver.AttrOutcome].AsString() != "refused" ||
			a[attrRefusal].AsString() != admission.CauseWait {
			t.Errorf("attributes %v", span.Attributes)
		}
		// It waited out the gate's 5 ms bound.
		if w := a[attrWaited].AsFloat64(); w < 0.005 {
			t.Errorf("waited %v s, want the bound's 5 ms at least", w)
		}
		if span.Status.Code != codes.Error || !strings.Contains(span.Status.Description, "waited too long") {
			t.Errorf("status %+v, want the refusal", span.Status)
		}
	})
}

// spanLooks is a request context that counts the looks for a span in it.
type spanLooks struct {
	context.Context
	n int
}

func (c *spanLooks) Value(key any) any {
	// The key of otel's current span, unexported: its type's name.
	if fmt.Sprintf("%T", key) == "trace.traceContextKeyType" {
		c.n++
	}
	return c.Context.Value(key)
}

// Tracing off, what tracing costs a protected request is its looks for a
// span in the context (no allocation: BenchmarkProtectedRequest): the
// token validation's one and the legacy call's one.
func TestTraceOffLooks(t *testing.T) {
	ts := newTestSite(t)
	ctx := &spanLooks{Context: context.Background()}
	r := httptest.NewRequest("POST", "/account/graphql", nil).WithContext(ctx)
	r.Header.Set("Authorization", "Bearer "+ts.token)
	ts.serve(t, r) // the validation cache warmed
	if ts.upstream.header == nil {
		t.Fatal("not forwarded")
	}
	ctx.n = 0
	r.Header.Set("Authorization", "Bearer "+ts.token)
	ts.serve(t, r)
	if ctx.n != 2 {
		t.Errorf("a protected request looked for a span %d times, want 2", ctx.n)
	}
}
