package policy

import (
	"net/http"
	"strings"
)

// ForwardedProto is the scheme the nearest proxy reports: the proto of
// the last element of Forwarded, else the last value of
// X-Forwarded-Proto. Each proxy on the way adds its element at the end,
// so the last is the one the trusted proxy in front of the server wrote; a
// client's own value before it is not believed. Only http and https
// count (in any case); anything else is as if nothing were reported.
func ForwardedProto(h http.Header) (string, bool) {
	if v := h.Values("Forwarded"); len(v) > 0 {
		if proto, ok := lastForwardedProto(v[len(v)-1]); ok {
			return proto, true
		}
	}
	if v := h.Values("X-Forwarded-Proto"); len(v) > 0 {
		last := v[len(v)-1]
		if i := strings.LastIndexByte(last, ','); i >= 0 {
			last = last[i+1:]
		}
		return httpScheme(strings.TrimSpace(last))
	}
	return "", false
}

// lastForwardedProto reads the proto parameter of the last element of a
// Forwarded field value: elements are separated by commas, parameters by
// semicolons, and a value may be a quoted string holding either.
func lastForwardedProto(v string) (string, bool) {
	elem := lastElement(v)
	for len(elem) > 0 {
		var pair string
		pair, elem = cutOutsideQuotes(elem, ';')
		name, value, ok := strings.Cut(pair, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "proto") {
			continue
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		return httpScheme(value)
	}
	return "", false
}

// lastElement is the text after the last comma outside quotes.
func lastElement(v string) string {
	last := v
	for rest := v; len(rest) > 0; {
		last, rest = cutOutsideQuotes(rest, ',')
	}
	return last
}

// cutOutsideQuotes splits s at the first sep that is not inside a quoted
// string (where a backslash escapes the next character).
func cutOutsideQuotes(s string, sep byte) (before, after string) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// httpScheme is s as http or https, in lower case; anything else is none.
func httpScheme(s string) (string, bool) {
	switch {
	case strings.EqualFold(s, "https"):
		return "https", true
	case strings.EqualFold(s, "http"):
		return "http", true
	}
	return "", false
}
