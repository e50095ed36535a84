package caddymodule

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/school"
)

// A school that could not be built from its data (a store that does not
// open, keys that do not read) is a *school.BuildError: the configuration
// is fine, so the other schools start and this one answers 503 until a
// reload or one of its rebuilds in the background (rebuild.go) builds it.
// A file that ships with the configuration (the admin OpenAPI document)
// is configuration: an error in it fails the load.

func failedLoading(reason string, err error) error {
	return &school.BuildError{Reason: reason, Err: err}
}

// failedSite is the stand-in of a school whose load failed, a site
// block's or a platform's: it keeps the legacy site's public pages
// reachable and answers everything the gateway owns or protects with 503
// and the reason, until a rebuild succeeds. A site block's is rebuilt on
// its own schedule (rebuild.go), a platform's by platform.School, which
// holds it while it fails.
type failedSite struct {
	gateway *Gateway
	issuer  string
	policy  *policy.Policy
	// legacy bounds the public pages' requests to the legacy server, as
	// the school's own bound would.
	legacy *school.Legacy
	since  time.Time
	// failure is why the last attempt to build the school failed.
	failure atomic.Pointer[school.BuildError]
	rebuild rebuilder

	// next is the handler a platform's stand-in hands the legacy site's
	// public pages to, the proxy it holds itself: nil for a record that
	// does not read as a configuration, which names no legacy server. A
	// site block's stand-in is handed Caddy's next at each request.
	next caddyhttp.Handler
	// releaseNext lets go of next, once: when a rebuild replaced the
	// stand-in, or the school was retired.
	releaseNext func()
}

func newFailedSite(g *Gateway, f *school.BuildError) *failedSite {
	fs := &failedSite{gateway: g, issuer: g.Issuer, since: time.Now().UTC(),
		policy: g.Policy(), legacy: school.NewLegacy(g.LegacyConcurrency(), nil)}
	fs.failure.Store(f)
	fs.rebuild.next.Store(time.Now().Add(firstRebuild).UnixNano())
	return fs
}

// serve answers one request of the failed school; without a legacy
// server (next), every request is answered 503.
func (f *failedSite) serve(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if next == nil {
		return school.WriteTemporarilyUnavailable(w, f.retryAfter(),
			"this school is not available: "+f.failure.Load().Reason)
	}
	return school.ServeFailed(w, r, next, f.legacy, f.policy, f.failure.Load().Reason, f.retryAfter())
}

// retryAfter is the Retry-After of a failed school, in seconds: the time
// left to its next rebuild, at least one.
func (f *failedSite) retryAfter() int {
	left := time.Until(f.nextTry())
	return max(int((left+time.Second-1)/time.Second), 1)
}

// end lets go of what a platform's stand-in holds: its rebuilds and its
// legacy server's proxy.
func (f *failedSite) end() {
	f.rebuild.stop()
	if f.releaseNext != nil {
		f.releaseNext()
	}
}
