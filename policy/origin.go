package policy

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// ParseOrigin is the one rule for an origin anywhere in the gateway (the
// issuer, the upstream, resource indicators, Origin headers): an http or
// https URL of a host and an optional port and nothing else (no user
// information, path, query or fragment; a single trailing slash is
// allowed because RFC 8707 resources are often written that way). It
// returns the ASCII serialization of RFC 6454: scheme and host in lower
// case, the port in decimal without leading zeros and dropped when it is
// the scheme's default, IPv6 addresses in brackets. That is the origin's
// one spelling: every spelling of an origin gives the same string, and the
// string parses to itself, so whatever is named after an origin (a data
// directory, a database row, a metrics label) is named once.
func ParseOrigin(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", fmt.Errorf("%q is not a URL", raw)
	case u.Opaque != "" || (u.Scheme != "" && u.Host == "" && u.Path != ""):
		return "", fmt.Errorf("%q is not an origin such as https://school.example", raw)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("%q must start with http:// or https://", raw)
	}
	// A zone (%25eth0) names a network interface of one machine, not a
	// host, and would not parse again once decoded.
	if u.Hostname() == "" || strings.Contains(u.Hostname(), "%") || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" ||
		u.ForceQuery || strings.HasSuffix(raw, "#") {
		return "", fmt.Errorf("%q must be a scheme and host only, such as https://school.example", raw)
	}
	return scheme + "://" + CanonicalHost(u.Host, scheme), nil
}

// NormalizeOrigin is ParseOrigin for callers that only need to know
// whether raw is an origin.
func NormalizeOrigin(raw string) (string, bool) {
	o, err := ParseOrigin(raw)
	return o, err == nil
}

// CanonicalHost lowercases host[:port] (a Host header, or a URL's host),
// writes the port without leading zeros and drops the default port of
// scheme, so that equal hosts compare equal as strings.
func CanonicalHost(hostport, scheme string) string {
	hostport = strings.ToLower(hostport)
	if !strings.ContainsAny(hostport, ":[]") {
		// A name without a port is its own spelling: returned without
		// the parse, whose errors for the missing port allocated on
		// every call (a platform's host table asks once a school).
		return hostport
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), ""
	}
	if n, err := strconv.ParseUint(port, 10, 16); err == nil {
		port = strconv.FormatUint(n, 10)
	}
	if scheme == "https" && port == "443" || scheme == "http" && port == "80" {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		return host + ":" + port
	}
	return host
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

// IsLoopbackHost reports whether a host, with or without a port, is a
// loopback name or address.
func IsLoopbackHost(hostport string) bool {
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
