package caddymodule

import (
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/policy"
)

// ServeHTTP routes a request: the gateway's own endpoints are answered
// here; protected resources are checked and passed on with the caller's
// identity; everything else goes to the next handler (the reverse proxy)
// untouched but for headers only the gateway may set.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	stripIdentityHeaders(r.Header)
	path := r.URL.Path
	s := g.site
	switch {
	case authserver.Owns(path):
		s.as.ServeHTTP(w, r)
		return nil
	case s.serveExtras(w, r):
		return nil
	}
	if policy.IsProtected(path, g.AdminPrefix) {
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			writePreflight(w)
			return nil
		}
		return s.serveProtected(w, r, next)
	}
	stripBearer(r.Header)
	return next.ServeHTTP(w, r)
}

// serveProtected checks the bearer token against the route's requirement
// and forwards the request with identity headers instead of the token.
func (s *site) serveProtected(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	req, decision := s.policy.Decide(r.Method, r.URL.EscapedPath())
	if decision != policy.Allow {
		s.observe.protectedOutcome("denied_by_policy")
		writePolicyDenial(w, r, decision, s.as.ResourceMetadataURL())
		return nil
	}
	tok, ch := policy.Check(r.Context(), s.as, r, req, s.as.Issuer())
	if ch != nil {
		s.observe.protectedOutcome(ch.Error)
		ch.ResourceMetadata = s.as.ResourceMetadataURL()
		ch.Write(w)
		return nil
	}
	s.observe.protectedOutcome("allowed")
	r.Header.Del("Authorization")
	setIdentity(r, tok)
	return next.ServeHTTP(w, r)
}

// writePreflight lets browser clients call the protected resources with a
// bearer token; no cookies are involved, so any origin may.
func writePreflight(w http.ResponseWriter) {
	policy.AllowCORS(w.Header(), "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
	w.WriteHeader(http.StatusNoContent)
}

// writePolicyDenial answers a request the policy refuses outright.
func writePolicyDenial(w http.ResponseWriter, r *http.Request, d policy.Decision, resourceMetadata string) {
	ch := policy.Challenge{Status: http.StatusForbidden, Error: "insufficient_scope",
		Description: "no scope grants access to this operation", ResourceMetadata: resourceMetadata}
	if d == policy.MethodNotAllowed {
		ch = policy.Challenge{Status: http.StatusMethodNotAllowed, Error: "invalid_request",
			Description: "method not allowed here", ResourceMetadata: resourceMetadata}
	}
	ch.Write(w)
}

// stripIdentityHeaders removes every X-School-* header a client sent:
// the legacy server trusts them, so only the gateway may set them.
func stripIdentityHeaders(h http.Header) {
	for name := range h {
		if len(name) >= 9 && strings.EqualFold(name[:9], "X-School-") {
			delete(h, name)
		}
	}
}

// stripBearer keeps tokens from leaving the gateway on pass-through
// requests; other credentials the legacy site may use pass unchanged.
func stripBearer(h http.Header) {
	for _, v := range h.Values("Authorization") {
		if len(v) >= 7 && strings.EqualFold(v[:7], "bearer ") {
			h.Del("Authorization")
			return
		}
	}
}
