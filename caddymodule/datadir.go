package caddymodule

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// dataPath is the site's bbolt file.
func (g *Gateway) dataPath() string {
	dir := g.Data
	if dir == "" {
		dir = filepath.Join(defaultDataRoot(), hostFileName(g.Issuer))
	}
	abs, err := filepath.Abs(filepath.Join(dir, "school.db"))
	if err != nil {
		return filepath.Join(dir, "school.db")
	}
	return abs
}

// defaultDataRoot holds the data directories of the schools that set no
// data option, one per school.
func defaultDataRoot() string { return filepath.Join(caddy.AppDataDir(), "schoolgate") }

// hostFileName names a file or directory after an origin: its host and
// port, ':' made '_' and an IPv6 address's brackets dropped
// (school.example, 127.0.0.1_8080).
func hostFileName(origin string) string {
	u, err := url.Parse(origin)
	if err != nil {
		return ""
	}
	return strings.NewReplacer(":", "_", "[", "", "]", "").Replace(u.Host)
}
