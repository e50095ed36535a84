package school

import (
	"net/http"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
)

// ServeFailed answers a request of a school that could not be built: the
// legacy site's public pages stay reachable through next, within legacy's
// bound, and everything the school owns or protects under p is answered
// 503 with the reason (in words a client may read) and Retry-After
// (seconds).
func ServeFailed(w http.ResponseWriter, r *http.Request, next Handler, legacy *Legacy, p *policy.Policy, reason string, retryAfter int) error {
	stripIdentityHeaders(r.Header)
	protected, err := canonicalize(p, r)
	if err != nil {
		writePathRefusal(w, err, "")
		return nil
	}
	path := r.URL.Path
	if !protected && !sitepath.IsAuthServer(path) && !sitepath.IsMCP(path) && !sitepath.IsDocument(path) {
		stripBearer(r.Header)
		return legacy.Forward(w, r, next)
	}
	return WriteTemporarilyUnavailable(w, retryAfter,
		"this school's sign-in and AI access are not available: "+reason)
}
