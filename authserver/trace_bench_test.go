package authserver

import (
	"context"
	"fmt"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// caddyDepth is how many values deep a request's context is when Caddy
// hands it to the gateway: net/http's (the connection's, the server's,
// the local address, the request's cancellation) and Caddy's own (the
// replacer, server, vars, route groups, original request, log fields,
// the TLS state), so that a lookup walks what it walks in Caddy.
const caddyDepth = 14

type depthKey int

// BenchmarkSpanLookupOff is what each place that could start a span
// costs with tracing off: one look for a span in the request's context,
// which has none (Caddy without `tracing`: the no-op tracer provider,
// no span). A protected request makes three (LookupAccessToken's and
// the legacy call's, and the admission's on a shared instance), a code
// exchange four or five; BENCHMARKS.md, "Traces".
func BenchmarkSpanLookupOff(b *testing.B) {
	for _, depth := range []int{0, caddyDepth} {
		b.Run(fmt.Sprintf("depth-%d", depth), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for i := range depth {
				ctx = context.WithValue(ctx, depthKey(i), i)
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if trace.SpanFromContext(ctx).SpanContext().IsValid() {
					n++
				}
			}
			if n != 0 {
				b.Fatal("a span where none was put")
			}
		})
	}
}

// BenchmarkTokenCPUTraced is BenchmarkTokenCPU under a span of a tracer
// provider that samples every request and exports nowhere: what the
// token endpoint's spans (the endpoint's, the store commit's) cost when
// Caddy's tracing is on, before any export.
func BenchmarkTokenCPUTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, parent := tp.Tracer("caddy").Start(context.Background(), "caddy request")
	defer parent.End()
	benchTokenCPU(b, ctx)
}
