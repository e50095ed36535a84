package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The store's spans (docs/operator.md, "Traces"), children of the
// request's span when Caddy's tracing is on: "schoolgate store" for a
// store call (its statement or transaction, named by what it does, with
// its retries), and "schoolgate store commit" for a transaction's commit.
// Never a statement's arguments: they hold token hashes and people.

const tracerName = "github.com/schoolgate/schoolgate"

// retryTraced is retry within a span.
func retryTraced(ctx context.Context, op string, limit time.Duration, fn func(context.Context) error) error {
	ctx, span := trace.SpanFromContext(ctx).TracerProvider().Tracer(tracerName).
		Start(ctx, "schoolgate store", trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	err := retryCall(ctx, op, limit, fn)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("db.system.name", "postgresql"), attribute.String("db.operation.name", op))
		if err != nil {
			span.SetStatus(codes.Error, op)
		}
	}
	return err
}

// commitTraced commits tx, within a span when ctx has one.
func commitTraced(ctx context.Context, tx pgx.Tx) error {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() {
		return tx.Commit(ctx)
	}
	ctx, span := parent.TracerProvider().Tracer(tracerName).
		Start(ctx, "schoolgate store commit", trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	err := tx.Commit(ctx)
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, "commit failed")
	}
	return err
}
