package caddymodule

import (
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	platformcore "github.com/schoolgate/schoolgate/platform"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/registry"
)

// hostTable is the platform's host table (platform.Table) of its
// schools: an immutable value, replaced at each registry change by a copy
// that shares all it did not change, so a request reads it without a
// lock.
type hostTable = platformcore.Table[*platformSchool]

func newHostTable(size int) *hostTable { return platformcore.NewTable[*platformSchool](size) }

// Record is the school's record, as the host table routes to it.
func (e *platformSchool) Record() *registry.Record { return &e.rec }

// lookupRequest finds the school of r's host and scheme (requestHTTPS:
// the connection's, or the one a trusted proxy reports).
func lookupRequest(t *hostTable, r *http.Request) *platformSchool {
	return t.Lookup(r.Host, requestHTTPS(r))
}

// hostName is a host key without its port (platform.HostName).
func hostName(key string) string { return platformcore.HostName(key) }

// requestHTTPS reports whether the request's client asked for https: a
// school is an origin, and https://school.example is not
// http://school.example. Behind a load balancer that ends TLS, the
// connection Caddy sees is plain http whatever the client used; the
// balancer says what it was, in Forwarded's proto (RFC 7239) or
// X-Forwarded-Proto. Those headers count only from a proxy Caddy trusts
// (the server's trusted_proxies, which Caddy has judged the request by
// already): from any other address anyone could write them, and they
// change nothing. Without such a header, the connection's own scheme.
func requestHTTPS(r *http.Request) bool {
	own := r.TLS != nil
	if trusted, _ := caddyhttp.GetVar(r.Context(), caddyhttp.TrustedProxyVarKey).(bool); !trusted {
		return own
	}
	if proto, ok := policy.ForwardedProto(r.Header); ok {
		return proto == "https"
	}
	return own
}
