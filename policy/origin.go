package policy

import (
	"net"
	"net/url"
	"strings"
)

// NormalizeOrigin returns the ASCII serialization of an origin
// (scheme://host[:port], lower case, default port dropped) for an http(s)
// URL that names nothing but an origin; a single trailing slash is allowed
// because RFC 8707 resources are often written that way.
func NormalizeOrigin(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", false
	}
	if u.Path != "" && u.Path != "/" || strings.HasSuffix(raw, "?") || strings.HasSuffix(raw, "#") {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if host == "" || (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		return scheme + "://" + host + ":" + port, true
	}
	return scheme + "://" + host, true
}

// SameOrigin reports whether a and b are the same origin.
func SameOrigin(a, b string) bool {
	na, ok := NormalizeOrigin(a)
	if !ok {
		return false
	}
	nb, ok := NormalizeOrigin(b)
	return ok && na == nb
}

// IsLoopbackHost reports whether a host (without port) is a loopback name
// or address.
func IsLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
