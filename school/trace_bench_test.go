package school

import (
	"context"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// BenchmarkProtectedRequestTraced is BenchmarkProtectedRequest
// (assertion off) under a span of a tracer provider that samples every
// request and exports nowhere: what the gateway's spans cost when
// Caddy's tracing is on (the span Caddy makes itself not counted).
func BenchmarkProtectedRequestTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	ts := newTestSite(b, func(c *Config) { c.Observer = nil })
	ctx, parent := tp.Tracer("caddy").Start(context.Background(), "caddy request")
	defer parent.End()
	r := httptest.NewRequest("POST", "/account/graphql", nil).WithContext(ctx)
	auth := []string{"Bearer " + ts.token}
	w := httptest.NewRecorder()
	r.Header["Authorization"] = auth
	if err := ts.Serve(w, r, ts.upstream); err != nil || ts.upstream.header == nil {
		b.Fatalf("not forwarded: %v %d", err, w.Code)
	}
	b.ReportAllocs()
	for b.Loop() {
		r.Header["Authorization"] = auth
		_ = ts.Serve(w, r, ts.upstream)
	}
}
