package boltstore

import (
	"context"

	bolt "go.etcd.io/bbolt"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// writeTraced is write within a span "schoolgate store commit", a child
// of the request's span (docs/operator.md, "Traces"): how long the write
// waited for and shared its group commit, and how many writes that
// commit held. Only called when the context has a span.
func (s *boltStore) writeTraced(ctx context.Context, fn func(*bolt.Tx) error) error {
	parent := trace.SpanFromContext(ctx)
	ctx, span := parent.TracerProvider().Tracer("github.com/schoolgate/schoolgate").
		Start(ctx, "schoolgate store commit", trace.WithSpanKind(trace.SpanKindInternal))
	defer span.End()
	size, err := s.writeSized(ctx, fn)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("db.system.name", "bbolt"),
			attribute.Int("schoolgate.store.group_commit_size", size))
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	return err
}
