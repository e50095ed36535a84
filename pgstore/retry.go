package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/trace"

	"github.com/schoolgate/schoolgate/store"
)

// callTimeout bounds every store call, the wait for a pooled connection
// included: a database that stalls must turn into a 503 quickly, not into
// requests piling up behind it.
const callTimeout = 5 * time.Second

// maxRetries is how many times a call is retried after a serialization
// failure or a deadlock, which are PostgreSQL's way of saying "try again".
const maxRetries = 3

// callbackError carries an error that a caller's callback returned,
// which the store returns as it is and never retries.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// retry runs fn, with a deadline of limit below ctx's, until it succeeds,
// fails for good, or has been retried maxRetries times. A ctx that has
// already ended fails with ctx.Err() before fn runs. Errors are returned
// as the contract wants them: the store's own errors and callbacks' as
// they are, database failures wrapped with op and scrubbed of the
// connection's configuration.
func retry(ctx context.Context, op string, limit time.Duration, fn func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if trace.SpanFromContext(ctx).SpanContext().IsValid() {
		return retryTraced(ctx, op, limit, fn)
	}
	return retryCall(ctx, op, limit, fn)
}

// retryCall is retry without its span.
func retryCall(ctx context.Context, op string, limit time.Duration, fn func(context.Context) error) error {
	// The request waits on the database, not the processors: its share of
	// them is given back for the whole call (the wait for a connection
	// included) and taken back once the call holds nothing, for taking it
	// back may wait its turn (store.Waiter).
	if w := store.WaiterOf(ctx); w != nil {
		w.Pause()
		defer w.Resume()
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var err error
	for attempt := 0; ; attempt++ {
		if err = fn(ctx); err == nil || !retryable(err) {
			return failure(op, err)
		}
		if attempt == maxRetries || !sleep(ctx, backoff(attempt)) {
			return fmt.Errorf("pgstore: %s: gave up after %d attempts: %w", op, attempt+1, scrub(err))
		}
	}
}

// retryable: a serialization failure or a deadlock rolled the transaction
// back, and running it again is the remedy; so is an error the driver
// knows happened before anything reached the server.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "40001" || pgErr.Code == "40P01"
	}
	return pgconn.SafeToRetry(err)
}

// backoff spreads the retries of transactions that collided, so that they
// do not collide again.
func backoff(attempt int) time.Duration {
	base := 5 * time.Millisecond << attempt
	return base + rand.N(base)
}

// sleep waits d, or less if ctx ends first, and reports whether it waited.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// failure is the error a store call returns for err.
func failure(op string, err error) error {
	var cb callbackError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &cb):
		return cb.err
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrCodeReuse),
		errors.Is(err, store.ErrRefreshReuse), errors.Is(err, store.ErrClientLimit),
		errors.Is(err, store.ErrWrongKey):
		return err
	}
	return fmt.Errorf("pgstore: %s: %w", op, scrub(err))
}

// scrub replaces a connection error, which carries the whole connection
// configuration (the password included) for errors.As to find, with its
// message alone. Whether it was a timeout or a cancellation survives.
func scrub(err error) error {
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		return err
	}
	s := &scrubbed{msg: err.Error()}
	for _, c := range []error{context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, c) {
			s.cause = c
		}
	}
	return s
}

type scrubbed struct {
	msg   string
	cause error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.cause }
