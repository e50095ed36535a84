package school

import (
	"errors"
	"net/http"
	"strings"

	"github.com/schoolgate/schoolgate/admission"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// Serve routes a request: the school's own endpoints are answered here;
// protected resources are checked and passed to next with the caller's
// identity; everything else goes to next untouched but for headers only
// the gateway may set. Every request is first given its canonical path,
// which is what is judged and what the legacy server receives. An error
// is next's, or a *StatusError. Every request counts in the school's
// usage, with its duration until next returned.
func (s *Site) Serve(w http.ResponseWriter, r *http.Request, next Handler) error {
	start := s.now()
	err := s.serve(w, r, next)
	s.usage.rec.served(start, s.now())
	return err
}

func (s *Site) serve(w http.ResponseWriter, r *http.Request, next Handler) error {
	stripIdentityHeaders(r.Header)
	protected, ok := s.canonicalPath(w, r)
	if !ok {
		return nil
	}
	rt := routeOf(r.URL.Path, protected)
	slot, ok := s.admit(w, r, rt)
	if !ok {
		return nil
	}
	if slot.Counted() {
		// The instance is shared: the slot goes into the request's
		// context, for the store and the calls to the legacy server to
		// give it back while they wait (store.Waiter).
		held := new(admission.Slot)
		*held = slot
		defer held.Release()
		return s.route(w, r.WithContext(store.WithWaiter(r.Context(), held)), next, rt, held)
	}
	defer slot.Release()
	return s.route(w, r, next, rt, &slot)
}

// route serves an admitted request by its route; the slot is given back
// before the legacy server is asked.
func (s *Site) route(w http.ResponseWriter, r *http.Request, next Handler, rt route, slot *admission.Slot) error {
	switch rt {
	case routeAuth, routePublic:
		s.as.ServeHTTP(w, r)
		return nil
	case routeMCP:
		s.serveMCP(w, r)
		return nil
	case routeDocument:
		s.serveDocument(w, r)
		return nil
	case routeProtected:
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			writePreflight(w)
			return nil
		}
		return s.serveProtected(w, r, next, slot)
	}
	// The legacy site: the gateway's work is done.
	stripBearer(r.Header)
	slot.Release()
	return s.legacy.Forward(w, r, next)
}

// canonicalPath replaces the request's path with its canonical form, or
// answers 400 when the path cannot be forwarded unambiguously. The query
// is kept byte for byte.
func (s *Site) canonicalPath(w http.ResponseWriter, r *http.Request) (protected, ok bool) {
	protected, err := canonicalize(s.policy, r)
	if err != nil {
		var pe *policy.PathError
		if errors.As(err, &pe) && pe.Protected {
			s.observe.ProtectedOutcome("path_refused")
		}
		writePathRefusal(w, err, s.as.ResourceMetadataURL())
		return false, false
	}
	return protected, true
}

// canonicalize gives r the canonical form of its path under p and says
// whether some reading of it is protected; an error is a path that cannot
// be forwarded unambiguously.
func canonicalize(p *policy.Policy, r *http.Request) (protected bool, err error) {
	sent := r.URL.EscapedPath()
	canon, protected, err := p.Canonical(sent)
	if err == nil && canon != sent {
		err = policy.SetRequestPath(r.URL, canon)
		r.RequestURI = r.URL.RequestURI()
	}
	return protected, err
}

// writePathRefusal answers a path the gateway will not forward: RFC 6750
// JSON where some reading of it names a protected resource, plain text
// elsewhere.
func writePathRefusal(w http.ResponseWriter, err error, resourceMetadata string) {
	var pe *policy.PathError
	if errors.As(err, &pe) && pe.Protected {
		ch := policy.Challenge{Status: http.StatusBadRequest, Error: "invalid_request",
			Description: pe.Reason, ResourceMetadata: resourceMetadata}
		ch.Write(w)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "400 Bad Request: "+err.Error(), http.StatusBadRequest)
}

// serveProtected checks the bearer token against the route's requirement
// and forwards the request with identity headers instead of the token.
func (s *Site) serveProtected(w http.ResponseWriter, r *http.Request, next Handler, slot *admission.Slot) error {
	req, decision := s.policy.Decide(r.Method, r.URL.EscapedPath())
	if decision != policy.Allow {
		s.observe.ProtectedOutcome("denied_by_policy")
		writePolicyDenial(w, decision, s.as.ResourceMetadataURL())
		return nil
	}
	tok, ch := s.as.Guard().Check(w, r, req)
	if ch != nil {
		s.observe.ProtectedOutcome(ch.Error)
		ch.ResourceMetadata = s.as.ResourceMetadataURL()
		ch.Write(w)
		return nil
	}
	s.observe.ProtectedOutcome("allowed")
	stripCredentials(r.Header)
	s.setIdentity(r, tok)
	if err := s.setAssertion(r.Header, tok); err != nil {
		return &StatusError{Status: http.StatusServiceUnavailable, Err: err}
	}
	slot.Release()
	return s.legacy.forward(w, r, next, writeProtectedRefusal)
}

// writePreflight lets browser clients call the protected resources with a
// bearer token; no cookies are involved, so any origin may.
func writePreflight(w http.ResponseWriter) {
	policy.AllowCORS(w.Header(), "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
	w.WriteHeader(http.StatusNoContent)
}

// writePolicyDenial answers a request the policy refuses outright.
func writePolicyDenial(w http.ResponseWriter, d policy.Decision, resourceMetadata string) {
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
// requests: a Bearer or DPoP credential and a DPoP proof; other
// credentials the legacy site may use pass unchanged.
func stripBearer(h http.Header) {
	for _, v := range h.Values("Authorization") {
		if len(v) >= 7 && strings.EqualFold(v[:7], "bearer ") || len(v) >= 5 && strings.EqualFold(v[:5], "dpop ") {
			h.Del("Authorization")
			break
		}
	}
	if _, ok := h["Dpop"]; ok {
		delete(h, "Dpop")
	}
}

// stripCredentials removes what a checked request authenticated with: the
// token and its DPoP proof, which the legacy server never sees.
func stripCredentials(h http.Header) {
	delete(h, "Authorization")
	if _, ok := h["Dpop"]; ok {
		delete(h, "Dpop")
	}
}
