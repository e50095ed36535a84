package mcpserver

import (
	"fmt"
	"strings"

	"github.com/schoolgate/schoolgate/policy"
)

// siteOrigin is Options.Origin taken apart once, for the Origin and Host
// checks of every request.
type siteOrigin struct {
	origin string // scheme://host[:port], lowercase, default port dropped
	scheme string
	host   string // host[:port] as a Host header names it
}

func parseSiteOrigin(s string) (siteOrigin, error) {
	o, err := policy.ParseOrigin(s)
	if err != nil {
		return siteOrigin{}, fmt.Errorf("origin: %v", err)
	}
	scheme, host, _ := strings.Cut(o, "://")
	return siteOrigin{origin: o, scheme: scheme, host: host}, nil
}

// allowOrigin decides whether a browser page at origin may call /mcp.
//
// DNS rebinding works by pointing an attacker's host name at the victim
// server, so the page's origin is the attacker's http:// name. The site's
// own origin, loopback origins and https origins cannot be produced that
// way: an https page would need a certificate for the site's address.
// Browser-based MCP clients live on https origins, and tokens travel as
// bearer headers, never cookies, so allowing them exposes no ambient
// credential. Everything else, including the opaque origin "null" of
// sandboxed frames and file:// pages, is refused.
func (o siteOrigin) allowOrigin(origin string) bool {
	// An Origin header is a bare serialization: no trailing slash.
	c, ok := policy.NormalizeOrigin(origin)
	if !ok || strings.HasSuffix(origin, "/") {
		return false
	}
	if c == o.origin || strings.HasPrefix(c, "https://") {
		return true
	}
	return policy.IsLoopbackHost(strings.TrimPrefix(c, "http://"))
}

// allowHost decides whether a request's Host header belongs to this site.
// A rebinding attack reaches the server with the attacker's host name in
// Host, so only the site's own host and loopback names are served.
func (o siteOrigin) allowHost(host string) bool {
	return policy.CanonicalHost(host, o.scheme) == o.host || policy.IsLoopbackHost(host)
}
