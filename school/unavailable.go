package school

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/schoolgate/schoolgate/policy"
)

// storeFailure marks an error as the school's store failing (unreachable,
// too slow, out of connections), which is answered 503 and not as what
// the request asked for being wrong or off.
type storeFailure struct{ err error }

func (e storeFailure) Error() string { return e.err.Error() }
func (e storeFailure) Unwrap() error { return e.err }

// IsStoreFailure reports whether err is the school's store failing.
func IsStoreFailure(err error) bool {
	var sf storeFailure
	return errors.As(err, &sf)
}

// WriteUnavailable answers a request the store failed: 503 with
// Retry-After and the OAuth error shape of the gateway's other 503s, so
// that automation retries instead of reading a 500 as a bug to report.
// The store's message, which may name hosts and paths, is logged, not
// answered. It returns WriteJSON's error.
func (s *Site) WriteUnavailable(w http.ResponseWriter, what string, err error) error {
	s.log.Error("store failed: "+what, "issuer", s.cfg.Issuer, "error", err)
	return WriteTemporarilyUnavailable(w, policy.RetryAfterUnavailable,
		what+" failed: the school's store did not answer; try again shortly")
}

// startingRetryAfter is the Retry-After, in seconds, of a request that
// gave up waiting for its school to be built.
const startingRetryAfter = 1

// WriteStarting answers a request whose school is not built yet: a site
// block's before its config's start built it, a platform's before its
// registry was read.
func WriteStarting(w http.ResponseWriter) error {
	return WriteTemporarilyUnavailable(w, startingRetryAfter,
		"this school is starting; try again in a moment")
}

// WriteTemporarilyUnavailable answers 503 with Retry-After (seconds) and
// {"error":"temporarily_unavailable","error_description":…}, never cached.
func WriteTemporarilyUnavailable(w http.ResponseWriter, retryAfter int, description string) error {
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(retryAfter))
	h.Set("Cache-Control", "no-store")
	return WriteJSON(w, http.StatusServiceUnavailable, map[string]string{
		"error":             "temporarily_unavailable",
		"error_description": description,
	})
}

// WriteJSON answers status with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}
