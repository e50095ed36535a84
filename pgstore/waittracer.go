package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/store"
)

// waitTracer pauses the request's Waiter (store.WaiterOf) while a query
// or a batch is under way: a request waiting on the database holds no
// share of the processors meanwhile. pgx calls the end of each for its
// start, whatever the outcome. The wait for a free connection is not
// paused: it comes right before the query, and resuming between the two
// could queue the request for nothing.
type waitTracer struct{}

var (
	_ pgx.QueryTracer = waitTracer{}
	_ pgx.BatchTracer = waitTracer{}
)

func pause(ctx context.Context) context.Context {
	if w := store.WaiterOf(ctx); w != nil {
		w.Pause()
	}
	return ctx
}

func resume(ctx context.Context) {
	if w := store.WaiterOf(ctx); w != nil {
		w.Resume()
	}
}

func (waitTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return pause(ctx)
}

func (waitTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	resume(ctx)
}

func (waitTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return pause(ctx)
}

func (waitTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (waitTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	resume(ctx)
}
