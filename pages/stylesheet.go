package pages

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/sitepath"
)

// The pages' one stylesheet is a file of the gateway's own, so their
// Content-Security-Policy allows styles of this origin alone and no inline
// style. Its name carries a hash of its content: browsers may keep it for
// a year, and a changed stylesheet is a new URL.
var (
	stylesheet     = mustReadPageFile("style.css")
	stylesheetPath = sitepath.Assets + "pages-" + contentHash(stylesheet) + ".css"
)

func mustReadPageFile(name string) []byte {
	b, err := pageFiles.ReadFile("templates/" + name)
	if err != nil {
		panic("pages: " + err.Error())
	}
	return b
}

// contentDigestBytes is how much of the content's SHA-256 names it.
const contentDigestBytes = 6

func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:contentDigestBytes])
}

// Asset answers GET and HEAD under sitepath.Assets: the stylesheet,
// or a JSON 404 for any other name.
//
// The stylesheet of another build (pages-<hash>.css with another hash) is
// answered with this build's, uncached: while instances of two builds
// serve a school side by side (a rolling upgrade), a page from one may
// ask another for its stylesheet, and a page styled by its neighbour's
// build reads better than an unstyled one.
func (*Pages) Asset(w http.ResponseWriter, r *http.Request) {
	cache := "public, max-age=31536000, immutable"
	switch {
	case r.URL.Path == stylesheetPath:
	case isStylesheetName(strings.TrimPrefix(r.URL.Path, sitepath.Assets)):
		cache = "no-cache"
	default:
		authserver.WriteNotFound(w)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/css; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(stylesheet)))
	h.Set("Cache-Control", cache)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(stylesheet)
	}
}

// isStylesheetName reports whether name is a stylesheet's file name as
// any build gives it: pages-, twelve lowercase hex digits of its content's
// digest, .css.
func isStylesheetName(name string) bool {
	digits, ok := strings.CutPrefix(name, "pages-")
	if !ok {
		return false
	}
	digits, ok = strings.CutSuffix(digits, ".css")
	if !ok || len(digits) != 2*contentDigestBytes {
		return false
	}
	for _, c := range digits {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
