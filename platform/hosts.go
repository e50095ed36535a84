package platform

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/schoolgate/schoolgate/internal/startgate"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/school"
)

// A request's way through the platform: the handler hands it to Hosts,
// which finds its school in the table that serves (one lookup) and hands
// it to School.Serve, which builds an idle school through the adapter's
// Builder and serves it with school.Site.Serve. Nothing on the way is the
// adapter's but the build of a cold school.

// Routed is a school as a request meets it in the table: its record, and
// Serve (School.Serve).
type Routed interface {
	Entry
	Serve(w http.ResponseWriter, r *http.Request) error
}

// Hosts is the host table that serves, replaced whole at each change of
// the registry, so that a request reads it without a lock; nil until the
// registry was read, and a request that arrives before waits for it as
// long as it lasts.
type Hosts[S Routed] struct {
	// table ends its wait at the first table, or once the platform ended
	// without one (a start that could not read the registry).
	table *startgate.Gate[Table[S]]
	// failure is why the registry cannot be read, nil if it can
	// (Watch.Failure): the Retry-After of a request with no table.
	failure func() *RegistryFailure
}

// NewHosts is a Hosts without a table; failure reports why the registry
// cannot be read.
func NewHosts[S Routed](failure func() *RegistryFailure) *Hosts[S] {
	return &Hosts[S]{table: startgate.New[Table[S]](), failure: failure}
}

// Load is the table that serves, nil before the registry was read.
func (h *Hosts[S]) Load() *Table[S] { return h.table.Load() }

// Set makes t the table that serves and lets the waiting requests in.
func (h *Hosts[S]) Set(t *Table[S]) { h.table.Set(t) }

// End lets the waiting requests go, with the table if one serves.
func (h *Hosts[S]) End() { h.table.End() }

// Await returns the table that serves, waiting for the first one no
// longer than ctx allows; nil if none serves (yet).
func (h *Hosts[S]) Await(ctx context.Context) *Table[S] { return h.table.Await(ctx) }

// Serve answers r through the school of its host and scheme (HTTPS):
// 503 before the registry was read, 404 for a host no enabled school
// answers on. trusted: r came from a proxy the server trusts, whose
// Forwarded proto counts.
func (h *Hosts[S]) Serve(w http.ResponseWriter, r *http.Request, trusted bool) error {
	t := h.Await(r.Context())
	if t == nil {
		return h.writeNoTable(w)
	}
	https := HTTPS(r, trusted)
	var none S
	for e := t.Lookup(r.Host, https); e != none; {
		err := e.Serve(w, r)
		if !errors.Is(err, errRetired) {
			return err
		}
		// The record changed after the lookup: the table that replaced
		// the one looked in has its school, or the next one if it
		// changed again meanwhile (each turn here is another change). A
		// table that still has the retired school is the last: the
		// platform is ending.
		next := h.table.Load().Lookup(r.Host, https)
		if next == e {
			return school.WriteStarting(w)
		}
		e = next
	}
	return writeNoSchool(w)
}

// HTTPS reports whether the request's client asked for https: a school
// is an origin, and https://school.example is not http://school.example.
// Behind a load balancer that ends TLS, the connection is plain http
// whatever the client used; the balancer says what it was, in
// Forwarded's proto (RFC 7239) or X-Forwarded-Proto. Those headers count
// only from a proxy the server trusts (trusted: Caddy's trusted_proxies,
// which Caddy has judged the request by already): from any other address
// anyone could write them, and they change nothing. Without such a
// header, the connection's own scheme.
func HTTPS(r *http.Request, trusted bool) bool {
	own := r.TLS != nil
	if !trusted {
		return own
	}
	if proto, ok := policy.ForwardedProto(r.Header); ok {
		return proto == "https"
	}
	return own
}

// writeNoSchool answers a host no enabled school answers on: a plain 404
// that says nothing of any school.
func writeNoSchool(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNotFound)
	_, err := io.WriteString(w, "404 Not Found: no school is served at this address\n")
	return err
}

// writeNoTable answers a request before the registry was read: 503 while
// the platform starts, or until the registry can be read.
func (h *Hosts[S]) writeNoTable(w http.ResponseWriter) error {
	f := h.failure()
	if f == nil {
		return school.WriteStarting(w)
	}
	return school.WriteTemporarilyUnavailable(w, f.RetryAfter(),
		"the schools of this server cannot be read now; try again shortly")
}
