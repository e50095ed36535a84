package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/schoolgate/schoolgate/store"
)

// TestRetry: serialization failures and deadlocks are retried up to
// maxRetries times; other errors are not, and each comes back as the
// contract wants it.
func TestRetry(t *testing.T) {
	ctx := context.Background()
	pgErr := func(code string) error { return &pgconn.PgError{Severity: "ERROR", Code: code, Message: "m"} }
	refused := errors.New("refused")
	for _, c := range []struct {
		name      string
		fail      []error // what the attempts return, in order; then nil
		wantCalls int
		check     func(t *testing.T, err error)
	}{
		{"serialization failure then success", []error{pgErr("40001"), pgErr("40P01")}, 3, func(t *testing.T, err error) {
			if err != nil {
				t.Errorf("err = %v, want success on the third attempt", err)
			}
		}},
		{"out of retries", []error{pgErr("40001"), pgErr("40001"), pgErr("40001"), pgErr("40001"), pgErr("40001")}, 1 + maxRetries, func(t *testing.T, err error) {
			var pe *pgconn.PgError
			if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), "pgstore: op: gave up after 4 attempts") {
				t.Errorf("err = %v, want the last failure, wrapped, after 4 attempts", err)
			}
		}},
		{"other database error", []error{pgErr("23505")}, 1, func(t *testing.T, err error) {
			if err == nil || !strings.HasPrefix(err.Error(), "pgstore: op: ") {
				t.Errorf("err = %v, want it wrapped with the operation", err)
			}
		}},
		{"callback error", []error{callbackError{refused}}, 1, func(t *testing.T, err error) {
			if err != refused {
				t.Errorf("err = %v, want the callback's error as is", err)
			}
		}},
		{"not found", []error{store.ErrNotFound}, 1, func(t *testing.T, err error) {
			if err != store.ErrNotFound {
				t.Errorf("err = %v, want ErrNotFound as is", err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := retry(ctx, "op", time.Second, func(context.Context) error {
				calls++
				if calls <= len(c.fail) {
					return c.fail[calls-1]
				}
				return nil
			})
			if calls != c.wantCalls {
				t.Errorf("%d attempts, want %d", calls, c.wantCalls)
			}
			c.check(t, err)
		})
	}
}

// TestRetryEndedContext: a caller that has given up is answered with its
// context's error, and nothing runs.
func TestRetryEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := retry(ctx, "op", time.Second, func(context.Context) error {
		t.Error("fn ran under a cancelled context")
		return nil
	})
	if err != context.Canceled {
		t.Errorf("err = %v, want context.Canceled as is", err)
	}
}

// TestRetryDeadline: the call's deadline bounds the retries too.
func TestRetryDeadline(t *testing.T) {
	start := time.Now()
	err := retry(context.Background(), "op", 30*time.Millisecond, func(ctx context.Context) error {
		<-ctx.Done()
		return &pgconn.PgError{Code: "40001"}
	})
	if err == nil || time.Since(start) > time.Second {
		t.Errorf("retry = %v after %v, want a failure at the deadline", err, time.Since(start))
	}
}
