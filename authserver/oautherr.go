package authserver

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/schoolgate/schoolgate/policy"
)

// oauthError is an RFC 6749 §5.2 error response.
type oauthError struct {
	Status      int    `json:"-"`
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
	// RetryAfter, in seconds, is sent as Retry-After (429 and 503 answers).
	RetryAfter int `json:"-"`
	// Challenge is sent as WWW-Authenticate: only to a client that tried
	// an HTTP authentication scheme (RFC 6749 §5.2 requires a challenge
	// of that scheme then). Clients authenticating in the body get none,
	// since no HTTP scheme is offered, and strict libraries read the body
	// of a 401 without a challenge as the OAuth error it is.
	Challenge string `json:"-"`
	// Nonce is sent as DPoP-Nonce: the nonce to retry with after
	// use_dpop_nonce (RFC 9449 §8).
	Nonce string `json:"-"`

	// reason, detail and subject are what the connection doctor notes of
	// the refusal (doctor.go): its reason when the code does not say it
	// well enough, a detail safe to keep, and the person when known.
	reason, detail, subject string
}

func (e *oauthError) Error() string { return e.Code + ": " + e.Description }

func errInvalidRequest(desc string) *oauthError {
	return &oauthError{Status: http.StatusBadRequest, Code: "invalid_request", Description: desc}
}
func errInvalidGrant(desc string) *oauthError {
	return &oauthError{Status: http.StatusBadRequest, Code: "invalid_grant", Description: desc}
}
func errInvalidClient(desc string) *oauthError {
	return &oauthError{Status: http.StatusUnauthorized, Code: "invalid_client", Description: desc}
}
func errInvalidScope(desc string) *oauthError {
	return &oauthError{Status: http.StatusBadRequest, Code: "invalid_scope", Description: desc}
}
func errInvalidTarget(desc string) *oauthError {
	return &oauthError{Status: http.StatusBadRequest, Code: "invalid_target", Description: desc}
}
func errServer(desc string) *oauthError {
	return &oauthError{Status: http.StatusInternalServerError, Code: "server_error", Description: desc}
}

// errUnavailable answers a request the store failed. The client is told
// to retry, never that its code, token or client is bad: it would throw
// away what is fine once the store answers again.
func errUnavailable(desc string) *oauthError {
	return &oauthError{Status: http.StatusServiceUnavailable, Code: "temporarily_unavailable",
		Description: desc, RetryAfter: policy.RetryAfterUnavailable}
}

// unavailable logs a store failure and returns its answer; the client
// sees what could not be done, not the store's error.
func (s *Server) unavailable(what string, err error) *oauthError {
	s.cfg.Logger.Error("store failed: "+what, "error", err)
	return errUnavailable(what + " is temporarily unavailable; try again shortly")
}

// writeJSON writes v as a JSON response that no cache may keep: every
// OAuth endpoint answer may carry tokens or per-request state.
func writeJSON(w http.ResponseWriter, status int, v any) {
	setJSONHeaders(w)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// setJSONHeaders sets the headers of a JSON answer no cache may keep.
func setJSONHeaders(w http.ResponseWriter) {
	// Set directly, in canonical form, the three values in one
	// allocation rather than three: each is a slice of its own capacity,
	// so that a handler appending to one cannot write over another.
	h := w.Header()
	vals := []string{"application/json", "no-store", "no-cache"}
	h["Content-Type"], h["Cache-Control"], h["Pragma"] = vals[0:1:1], vals[1:2:2], vals[2:3:3]
}

func writeOAuthError(w http.ResponseWriter, e *oauthError) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.Challenge != "" {
		w.Header().Set("WWW-Authenticate", e.Challenge)
	}
	if e.Nonce != "" {
		w.Header().Set("DPoP-Nonce", e.Nonce)
	}
	out := *e
	out.Description = errorText(e.Description)
	writeJSON(w, e.Status, &out)
}

// errorText is a description as it goes out: in RFC 6749's characters and
// at most maxErrorText bytes, whatever of the request it names.
func errorText(desc string) string {
	desc = policy.ErrorText(desc)
	if len(desc) > maxErrorText {
		desc = desc[:maxErrorText-3] + "..."
	}
	return desc
}

// refuse answers an OAuth error and counts it under the name of the
// request's route. A 429 is a limit, counted rate_limited as the route
// limits' are, whatever its error code: temporarily_unavailable counted
// is the store failing.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, e *oauthError) {
	code := e.Code
	if e.Status == http.StatusTooManyRequests {
		code = "rate_limited"
	}
	s.cfg.Observer.Refused(routeFor(r.URL.Path).metricName(), code)
	spanError(r.Context(), code)
	writeOAuthError(w, e)
}

// WriteNotFound answers an unknown OAuth path with JSON, never the legacy
// site's HTML: strict clients treat any 200 or HTML there as a broken server.
func WriteNotFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, &oauthError{Code: "not_found", Description: "no such endpoint"})
}

// maxErrorText bounds an error_description: it is a sentence for a
// developer, and some name what the request sent.
const maxErrorText = 512
