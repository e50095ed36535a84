package school

import (
	"errors"
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

// BuildError is a school that could not be built, the one failure type
// of a school that does not build, whoever builds it (a site block, a
// platform's record): its store did not open, its keys and settings did
// not read, its data directory is another school's, another part of the
// server's configuration serves it. Its configuration is otherwise fine,
// so the other schools start and this one answers 503 (ServeFailed) until
// a rebuild in the background builds it. Reason says what failed in words
// a client may read; Err, with its paths and hosts, is for the operator
// (logs, the admin API, the health report).
type BuildError struct {
	Reason string
	Err    error
}

func (e *BuildError) Error() string { return e.Err.Error() }
func (e *BuildError) Unwrap() error { return e.Err }

// AsBuildError is the BuildError in err, or err as one with reason when
// it holds none.
func AsBuildError(err error, reason string) *BuildError {
	if be, ok := errors.AsType[*BuildError](err); ok {
		return be
	}
	return &BuildError{Reason: reason, Err: err}
}
