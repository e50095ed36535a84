package demoschool

import (
	"net/http"
	"sync"
)

// The recorder is a test aid, not a feature of a legacy school. End-to-end
// tests use GET /__demo/last-request to see what the gateway actually
// forwarded to the protected endpoints: that the bearer token was removed,
// that client-sent X-School-* headers were replaced, and which identity
// headers were set. It shows every header of the last request, cookies
// included, to anyone who can reach the server, which is why the demo
// school must only listen on loopback (or run with the recorder off).

// RecordedRequest is what the recorder keeps of one request.
type RecordedRequest struct {
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Query   string              `json:"query"`
	Host    string              `json:"host"`
	Headers map[string][]string `json:"headers"`
}

// ProtectedEntry is one request that reached a protected handler: what
// the handler was handed and whether the gateway's identity came with it.
type ProtectedEntry struct {
	Method string `json:"method"`
	// Path is the path as received (escaped), Handler the handler it
	// reached ("account" or "admin:<area>").
	Path    string `json:"path"`
	Handler string `json:"handler"`
	Subject string `json:"subject"`
	Scopes  string `json:"scopes"`
}

// maxProtectedLog bounds the log; the oldest entries go first.
const maxProtectedLog = 1000

type recorder struct {
	mu   sync.Mutex
	last *RecordedRequest
	log  []ProtectedEntry
}

// wrap records each request before next handles it, so refused requests
// (401, 403) are recorded too.
func (rec *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := &RecordedRequest{
			Method:  r.Method,
			Path:    r.URL.Path,
			Query:   r.URL.RawQuery,
			Host:    r.Host,
			Headers: r.Header.Clone(),
		}
		if got.Headers == nil {
			got.Headers = map[string][]string{}
		}
		entry := ProtectedEntry{Method: r.Method, Path: r.URL.EscapedPath(), Handler: handlerName(r),
			Subject: r.Header.Get("X-School-Subject"), Scopes: r.Header.Get("X-School-Scopes")}
		rec.mu.Lock()
		rec.last = got
		if len(rec.log) == maxProtectedLog {
			rec.log = rec.log[1:]
		}
		rec.log = append(rec.log, entry)
		rec.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// handlerName names the protected handler legacyRouter gives r to.
func handlerName(r *http.Request) string {
	if hasPrefixFold(legacyPath(r), "/account/graphql") {
		return "account"
	}
	area, _ := adminRoute(r)
	return "admin:" + area
}

// protectedLog serves GET /__demo/protected-log: every request that
// reached a protected handler, oldest first.
func (rec *recorder) protectedLog(w http.ResponseWriter, _ *http.Request) {
	noStore(w)
	rec.mu.Lock()
	entries := append([]ProtectedEntry{}, rec.log...)
	rec.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"requests": entries})
}

// lastRequest serves GET /__demo/last-request.
func (rec *recorder) lastRequest(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	rec.mu.Lock()
	last := rec.last
	rec.mu.Unlock()
	if last == nil {
		writeError(w, http.StatusNotFound, "not_found", "no request to /account/graphql or /admin/api/ has been recorded yet")
		return
	}
	writeJSON(w, http.StatusOK, last)
}
