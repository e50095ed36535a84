package caddymodule

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/schoolgate/schoolgate/policy"
)

// storeFailure marks an error as the site's store failing (unreachable,
// too slow, out of connections), which is answered 503 and not as what
// the request asked for being wrong or off.
type storeFailure struct{ err error }

func (e storeFailure) Error() string { return e.err.Error() }
func (e storeFailure) Unwrap() error { return e.err }

func isStoreFailure(err error) bool {
	var sf storeFailure
	return errors.As(err, &sf)
}

// writeUnavailable answers an admin API request the store failed: 503
// with Retry-After and the OAuth error shape the gateway's other 503s
// have, so automation retries instead of reading a 500 as a bug to
// report. Caddy's own error answers would carry the store's message; it
// is logged here instead.
func (s *site) writeUnavailable(w http.ResponseWriter, what string, err error) error {
	s.log().Error("store failed: "+what, "issuer", s.gateway.Issuer, "error", err)
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(policy.RetryAfterUnavailable))
	h.Set("Cache-Control", "no-store")
	return writeAdminJSON(w, http.StatusServiceUnavailable, map[string]string{
		"error":             "temporarily_unavailable",
		"error_description": what + " failed: the school's store did not answer; try again shortly",
	})
}

// log is the site's logger; sites built without Caddy (tests) use the
// default one.
func (s *site) log() *slog.Logger {
	if s.logger != nil {
		return s.logger
	}
	return slog.Default()
}
