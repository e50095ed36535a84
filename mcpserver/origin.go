package mcpserver

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// siteOrigin is Options.Origin taken apart once, for the Origin and Host
// checks of every request.
type siteOrigin struct {
	origin string // scheme://host[:port], lowercase, default port dropped
	scheme string
	host   string // host[:port] as a Host header names it
}

func parseSiteOrigin(s string) (siteOrigin, error) {
	o, ok := canonicalOrigin(strings.TrimRight(s, "/"))
	if !ok {
		return siteOrigin{}, fmt.Errorf("origin %q must be an http(s) origin such as https://school.example", s)
	}
	scheme, host, _ := strings.Cut(o, "://")
	return siteOrigin{origin: o, scheme: scheme, host: host}, nil
}

// canonicalOrigin parses a serialized origin (RFC 6454): scheme, host and
// optional port, nothing else. It lowercases and drops the scheme's default
// port so that equal origins compare equal as strings.
func canonicalOrigin(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" || u.Hostname() == "" {
		return "", false
	}
	return scheme + "://" + canonicalHost(u.Host, scheme), true
}

// canonicalHost lowercases host[:port] and drops the default port of scheme.
func canonicalHost(hostport, scheme string) string {
	hostport = strings.ToLower(hostport)
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	if scheme == "https" && port == "443" || scheme == "http" && port == "80" {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return hostport
}

// isLoopbackHost reports whether host[:port] names this machine: the
// developer tools that talk to a gateway on a laptop (MCP Inspector, local
// agents) use these names, and a DNS-rebinding attacker cannot make a
// browser send them for its own page.
func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
	c, ok := canonicalOrigin(origin)
	if !ok {
		return false
	}
	if c == o.origin || strings.HasPrefix(c, "https://") {
		return true
	}
	return isLoopbackHost(strings.TrimPrefix(c, "http://"))
}

// allowHost decides whether a request's Host header belongs to this site.
// A rebinding attack reaches the server with the attacker's host name in
// Host, so only the site's own host and loopback names are served.
func (o siteOrigin) allowHost(host string) bool {
	return canonicalHost(host, o.scheme) == o.host || isLoopbackHost(host)
}
