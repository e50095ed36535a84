package caddymodule

import (
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/school"
)

// loadFailure is a school that could not be built from its data (a store
// that does not open, keys that do not read): the configuration is fine,
// so the other schools start and this one answers 503 until a reload or
// one of its rebuilds in the background (rebuild.go) builds it. A file
// that ships with the configuration (the admin OpenAPI document) is
// configuration: an error in it fails the load.
type loadFailure struct {
	// public says what failed in words a client may read; err, with its
	// paths and hosts, is for the operator (logs, /schoolgate/health).
	public string
	err    error
}

func (e *loadFailure) Error() string { return e.err.Error() }
func (e *loadFailure) Unwrap() error { return e.err }

func failedLoading(public string, err error) error {
	return &loadFailure{public: public, err: err}
}

// failedSite is the stand-in of a school whose load failed: it keeps the
// legacy site's public pages reachable and answers everything the gateway
// owns or protects with 503 and the reason, until a rebuild succeeds.
type failedSite struct {
	gateway *Gateway
	issuer  string
	policy  *policy.Policy
	// legacy bounds the public pages' requests to the legacy server, as
	// the school's own bound would.
	legacy *school.Legacy
	since  time.Time
	// failure is why the last attempt to build the school failed.
	failure atomic.Pointer[loadFailure]
	rebuild rebuilder
}

func newFailedSite(g *Gateway, f *loadFailure) *failedSite {
	fs := &failedSite{gateway: g, issuer: g.Issuer, since: time.Now().UTC(),
		policy: g.Policy(), legacy: school.NewLegacy(g.LegacyConcurrency(), nil)}
	fs.failure.Store(f)
	fs.rebuild.next.Store(time.Now().Add(firstRebuild).UnixNano())
	return fs
}

// serve answers one request of the failed school.
func (f *failedSite) serve(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	return school.ServeFailed(w, r, next, f.legacy, f.policy, f.failure.Load().public, f.retryAfter())
}

// retryAfter is the Retry-After of a failed school, in seconds: the time
// left to its next rebuild, at least one.
func (f *failedSite) retryAfter() int {
	left := time.Until(f.nextTry())
	return max(int((left+time.Second-1)/time.Second), 1)
}

// asLoadFailure finds the load failure in err.
func asLoadFailure(err error) (*loadFailure, bool) {
	var f *loadFailure
	ok := errors.As(err, &f)
	return f, ok
}
