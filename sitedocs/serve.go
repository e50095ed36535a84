package sitedocs

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Set is the documents of one site. Each is rendered on its first
// request and kept: a school nobody asks for its documents costs none of
// their memory (the OpenAPI document alone is over 150 KB), which counts
// when one Caddy serves a thousand schools. It is safe for concurrent use.
type Set struct {
	docs map[string]*lazyDoc
	// catalogUnread and adminUnread are Site.CatalogUnread and
	// Site.AdminOpenAPIUnread as the set was built with.
	catalogUnread, adminUnread bool
}

// Unread reports what the documents were rendered without because the
// site could not read it yet (Site.CatalogUnread, with no feed given to
// Build, and Site.AdminOpenAPIUnread): the site rebuilds them once it has.
func (s *Set) Unread() (catalog, adminOpenAPI bool) { return s.catalogUnread, s.adminUnread }

// lazyDoc is a document rendered once, when first served.
type lazyDoc struct {
	once        sync.Once
	render      func() ([]byte, error)
	contentType string
	// cache is the document's Cache-Control (cachePublic, cacheNoStore).
	cache string
	doc   *document
	err   error
}

// get renders the document the first time and returns it, or the error
// rendering gave.
func (l *lazyDoc) get() (*document, error) {
	l.once.Do(func() {
		body, err := l.render()
		if err != nil {
			l.err = err
			return
		}
		l.doc, l.render = newDocument(body, l.contentType), nil
	})
	return l.doc, l.err
}

// document is one rendered body with the headers that depend on it.
type document struct {
	body          []byte
	contentType   string
	etag          string
	contentLength string
}

func newDocument(body []byte, contentType string) *document {
	sum := sha256.Sum256(body)
	return &document{
		body:          body,
		contentType:   contentType,
		etag:          `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`,
		contentLength: strconv.Itoa(len(body)),
	}
}

// Owns reports whether path is one of the documents.
func (s *Set) Owns(path string) bool {
	if s == nil {
		return false
	}
	_, ok := s.docs[path]
	return ok
}

// ServeHTTP answers GET and HEAD for the documents with the stored body,
// public for five minutes, or kept by no cache when it lacks what the site
// could not read yet. Any other method gets 405; a path that is not a
// document gets 404.
func (s *Set) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("X-Content-Type-Options", "nosniff")
	var l *lazyDoc
	if s != nil {
		l = s.docs[r.URL.Path]
	}
	if l == nil {
		writeJSONError(w, http.StatusNotFound, "not_found", "no such document")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		writeJSONError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use GET or HEAD")
		return
	}
	d, err := l.get()
	if err != nil {
		// Build checked every input a school gives; a document that still
		// does not render is this build's fault, and the next config may
		// mend it.
		h.Set("Retry-After", "300")
		writeJSONError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the document could not be rendered")
		return
	}
	h.Set("ETag", d.etag)
	h.Set("Cache-Control", l.cache)
	if noneMatch(r.Header.Values("If-None-Match"), d.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", d.contentType)
	h.Set("Content-Length", d.contentLength)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(d.body)
	}
}

// noneMatch reports whether an If-None-Match header matches etag, using
// the weak comparison RFC 9110 §13.1.2 prescribes for this header.
func noneMatch(values []string, etag string) bool {
	opaque := strings.TrimPrefix(etag, "W/")
	for _, v := range values {
		for tag := range strings.SplitSeq(v, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" || strings.TrimPrefix(tag, "W/") == opaque {
				return true
			}
		}
	}
	return false
}

func writeJSONError(w http.ResponseWriter, status int, code, desc string) {
	h := w.Header()
	h.Set("Content-Type", typeJSON)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "{\"error\":%q,\"error_description\":%q}\n", code, desc)
}
