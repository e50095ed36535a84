package authserver

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"

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
	b, err := pageFiles.ReadFile("pages/" + name)
	if err != nil {
		panic("authserver: " + err.Error())
	}
	return b
}

func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// serveAsset answers GET and HEAD under sitepath.Assets: the stylesheet,
// or a JSON 404 for any other name (an old one after an upgrade, say).
func serveAsset(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != stylesheetPath {
		WriteNotFound(w)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/css; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(stylesheet)))
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(stylesheet)
	}
}
