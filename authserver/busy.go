package authserver

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/schoolgate/schoolgate/sitepath"
)

// Answers to a request the gateway does not serve now because the school
// is busy: its budget is spent (429) or it waited past its turn on the
// instance (503). They carry Retry-After and are never cached.

// WriteBusy answers a request to one of the server's paths: the error
// page in the person's language where the route serves pages (sign-in,
// consent, the person's area, the admin area), RFC 6749 JSON elsewhere.
func (s *Server) WriteBusy(w http.ResponseWriter, r *http.Request, status int, retryAfter time.Duration) {
	rt := routeFor(r.URL.Path)
	if rt.pages || rt.Path == sitepath.Admin {
		s.WriteBusyPage(w, r, status, retryAfter)
		return
	}
	if rt.cors {
		setCORS(w, false)
	}
	secs := RetryAfterSeconds(retryAfter)
	w.Header().Set("Cache-Control", "no-store")
	writeOAuthError(w, &oauthError{Status: status, Code: "temporarily_unavailable", RetryAfter: secs,
		Description: fmt.Sprintf("the school is busy; retry after %d s", secs)})
}

// WriteBusyPage answers a person's browser, on any path of the school,
// with the error page saying the school is busy, in their language.
func (s *Server) WriteBusyPage(w http.ResponseWriter, r *http.Request, status int, retryAfter time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds(retryAfter)))
	s.showError(w, r, status, ErrorPage{Key: "error.busy", Unavailable: true})
}

// RetryAfterSeconds is a wait as Retry-After gives it: whole seconds,
// rounded up, at least one.
func RetryAfterSeconds(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }
