package school

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// What one school may cost its legacy server, and so the instance: a
// legacy server that accepts connections and never answers would
// otherwise hold a goroutine and two connections for every request sent
// its way, for as long as the proxy's transport waits (without a
// response-header timeout, as long as each client does), and nothing
// would stop a hundred thousand of them. The bound is the school's, not
// its reverse proxy's: schools that share a legacy server also share one
// pooled proxy and transport, and each keeps its own bound.
//
// How long one request waits is the proxy's transport's to bound (its
// response-header timeout, which caddymodule sets on every proxy it
// builds): net/http counts it from the request written, so an upload that
// takes long is not cut, and it costs the request path nothing more.
// The school answers such a timeout itself, in its own shape, and counts
// it.
const (
	// sessionLookupTimeout bounds the session lookup, which a person
	// waits on at /authorize, consent and the connected applications
	// page: it is one small read, and a legacy server that has not
	// answered it in 5 s is better told apart from one that is merely
	// slow, with an error page that says to try again.
	sessionLookupTimeout = 5 * time.Second
	// legacyRetryAfter is the Retry-After, in seconds, of a request
	// refused because the legacy server already has as many of the
	// school's requests as its budget allows: as for a store that fails,
	// such overload is rarely over sooner, and every client of a school
	// retrying at once must not hold it down.
	legacyRetryAfter = policy.RetryAfterUnavailable
	// legacyQueueWait is how long a request waits for a place when the
	// legacy server has as many of the school's requests as its budget
	// allows, before it is refused; a place freed meanwhile goes to the
	// longest waiting. Measured with 512 clients flooding a hung legacy
	// server and retrying at once, on 2 cores (e2e's
	// BenchmarkLegacyNeighbour): refused at once, the clients without a
	// place spun on 503s and left the school beside 0.01× of its
	// throughput; made to wait a second, they are parked as the held ones
	// are, and it kept 0.62–0.90× (BENCHMARKS.md), no less than with no
	// bound at all. A second is also what a burst over the
	// bound in front of a legacy server that is merely slow needs to find
	// places freed.
	legacyQueueWait = time.Second
)

// errLegacyBusy is a call of the school's own refused for want of a
// place (store.CauseLegacyBusy).
var errLegacyBusy = errors.New("the school's legacy server is busy with the school's other requests")

// Legacy bounds one school's requests to its legacy server: at most its
// budget's LegacyConcurrency at once, more are refused 503 with
// Retry-After; one whose proxy timed out waiting for the legacy server
// is answered 504. It covers the requests the school passes to the
// reverse proxy and the school's own calls (session lookup, the MCP
// tools' Account API calls, an admin OpenAPI URL). A refusal writes
// nothing to the store. The request path costs a channel operation each
// way, no allocation.
type Legacy struct {
	// slots holds one element per request waiting on the legacy server.
	slots chan struct{}
	// wait is legacyQueueWait but in tests; queued counts the requests
	// waiting for a place.
	wait    time.Duration
	queued  atomic.Int32
	observe Observer
}

// NewLegacy is the bound of a budget's LegacyConcurrency (zero:
// DefaultLegacyConcurrency), counting its refusals through o (nil: not
// counted).
func NewLegacy(concurrency int, o Observer) *Legacy {
	n := concurrency
	if n <= 0 {
		n = DefaultLegacyConcurrency
	}
	if o == nil {
		o = nopObserver{}
	}
	return &Legacy{slots: make(chan struct{}, n), wait: legacyQueueWait, observe: o}
}

// InFlight is how many of the school's requests wait on its legacy
// server now.
func (l *Legacy) InFlight() int { return len(l.slots) }

// enter takes a place, waiting at most l.wait for one.
func (l *Legacy) enter(ctx context.Context) bool {
	select {
	case l.slots <- struct{}{}:
		return true
	default:
	}
	if l.wait <= 0 {
		return false
	}
	l.queued.Add(1)
	defer l.queued.Add(-1)
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (l *Legacy) leave() { <-l.slots }

// refusal answers a request the school does not send on (busy, 503) or
// whose answer did not come in time (504).
type refusal func(w http.ResponseWriter, status int)

// Forward sends r to next, the reverse proxy to the legacy server, within
// the bound; a refusal is plain text, as for a page of the legacy site.
func (l *Legacy) Forward(w http.ResponseWriter, r *http.Request, next Handler) error {
	return l.forward(w, r, next, writePlainRefusal)
}

// forward sends r to next within the bound, answering with refuse when
// there is no place or the proxy timed out waiting for the legacy server.
// A proxy that returns an error has written nothing (Caddy's reverse
// proxy aborts a response it had begun instead): the error is the
// caller's to answer, and a timeout the school answers.
func (l *Legacy) forward(w http.ResponseWriter, r *http.Request, next Handler, refuse refusal) error {
	if !l.enter(r.Context()) {
		l.observe.Refusal(store.CauseLegacyBusy)
		refuse(w, http.StatusServiceUnavailable)
		return nil
	}
	defer l.leave()
	if trace.SpanFromContext(r.Context()).SpanContext().IsValid() {
		ctx, span := startLegacySpan(r.Context(), "", r.Method, r.URL.Path, r.Header)
		sw := &statusWriter{ResponseWriter: w}
		err := next.ServeHTTP(sw, r.WithContext(ctx))
		endLegacySpan(span, sw.status, err)
		return l.forwarded(w, err, refuse)
	}
	return l.forwarded(w, next.ServeHTTP(w, r), refuse)
}

// forwarded answers what the proxy's error calls for.
func (l *Legacy) forwarded(w http.ResponseWriter, err error, refuse refusal) error {
	if err != nil && isTimeout(err) {
		l.observe.Refusal(store.CauseLegacyTimeout)
		refuse(w, http.StatusGatewayTimeout)
		return nil
	}
	return err
}

// isTimeout reports whether err is a timeout: a net.Error saying so
// (a reverse proxy's error wraps it), or a deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
}

// writePlainRefusal answers a pass-through request as a legacy page's
// error would be: plain text.
func writePlainRefusal(w http.ResponseWriter, status int) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	msg := "504 Gateway Timeout: the school's server did not answer in time"
	if status == http.StatusServiceUnavailable {
		h.Set("Retry-After", legacyRetryAfterText)
		msg = "503 Service Unavailable: the school's server is busy; try again in a moment"
	}
	http.Error(w, msg, status)
}

// writeProtectedRefusal answers a request to a protected resource in the
// shape of its other 503s: JSON temporarily_unavailable with CORS, and no
// Bearer challenge, which would tell the client to drop a good token.
func writeProtectedRefusal(w http.ResponseWriter, status int) {
	ch := policy.Challenge{Status: status, Error: "temporarily_unavailable",
		Description: "the school's server did not answer in time; try again"}
	if status == http.StatusServiceUnavailable {
		ch.Description = "the school's server is busy; try again in a moment"
		ch.RetryAfter = legacyRetryAfter
	}
	ch.Write(w)
}

var legacyRetryAfterText = strconv.Itoa(legacyRetryAfter)
