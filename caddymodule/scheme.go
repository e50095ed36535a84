package caddymodule

import (
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/schoolgate/schoolgate/policy"
)

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
