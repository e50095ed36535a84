package demoschool

import (
	"net/http"
	"net/url"
	"strings"
)

// safeReturnTo returns where a signed-in browser may be sent: raw when it
// stays on this site, "/" otherwise. The gateway sends absolute URLs of its
// own origin and proxies with the original Host header, so "this site" is a
// path, or an http(s) URL whose host is the request's Host.
func safeReturnTo(r *http.Request, raw string) string {
	if raw == "" || len(raw) > 8<<10 {
		return "/"
	}
	// Browsers treat a backslash as a slash and drop tabs and newlines in
	// URLs, so "/\evil.example" or "/\t/evil.example" would leave the site
	// even though Go's parser sees a path.
	for _, c := range raw {
		if c == '\\' || c <= ' ' || c == 0x7f {
			return "/"
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "/"
	}
	if u.Scheme == "" && u.Host == "" && u.User == nil && u.Opaque == "" {
		if strings.HasPrefix(raw, "/") && !strings.HasPrefix(raw, "//") {
			return raw
		}
		return "/"
	}
	if (u.Scheme == "http" || u.Scheme == "https") && u.User == nil && u.Opaque == "" &&
		u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return raw
	}
	return "/"
}
