package authserver

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The authorization server's spans (docs/operator.md, "Traces"): when
// Caddy's tracing handler has put a span in the request's context, each
// OAuth endpoint and each token validation is a child span of it, from
// the tracer provider that made it. Without one (tracing off), nothing is
// started, allocated or looked up: a span's attributes are set only on a
// recording span. No attribute ever holds a token, code, verifier,
// secret or a person's e-mail: the school, the client_id, the grant type,
// the outcome and the RFC error code.

// TracerName is the instrumentation scope of the gateway's spans.
const TracerName = "github.com/schoolgate/schoolgate"

// Attribute keys of the gateway's spans.
const (
	AttrSchool    = attribute.Key("schoolgate.school")
	AttrClientID  = attribute.Key("oauth.client_id")
	AttrGrantType = attribute.Key("oauth.grant_type")
	AttrOutcome   = attribute.Key("schoolgate.outcome")
	AttrError     = attribute.Key("oauth.error")
	AttrCacheHit  = attribute.Key("schoolgate.token.cache_hit")
)

// StartSpan starts a child span of ctx's span when ctx has a valid one,
// and returns ctx and a span that is not recording otherwise.
func StartSpan(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(TracerName).Start(ctx, name, trace.WithSpanKind(kind))
}

// spanError marks the request's span refused with code.
func spanError(ctx context.Context, code string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(AttrOutcome.String("refused"), AttrError.String(code))
		span.SetStatus(codes.Error, code)
	}
}

// spanCacheHit tells the validation's span whether the cache served it.
func spanCacheHit(span trace.Span, hit bool, clientID string) {
	if span.IsRecording() {
		span.SetAttributes(AttrCacheHit.Bool(hit))
		if clientID != "" {
			span.SetAttributes(AttrClientID.String(clientID))
		}
	}
}
