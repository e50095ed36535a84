package policy

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/schoolgate/schoolgate/sitepath"
)

// The gateway judges a request and forwards it with one and the same
// path: the canonical path computed here. A legacy server behind it may
// read a path in ways the gateway cannot see (decoding twice, trimming
// trailing dots, dropping ";params", stopping at NUL, treating "\" as
// "/"). Where such a reading could reach a protected handler, every
// spelling that leaves room for it is refused instead of forwarded.
//
// The model is Envoy's normalize_path + merge_slashes with
// path_with_escaped_slashes_action REJECT_REQUEST for protected paths:
// RFC 3986 §6.2.2 normalization (percent-encoded unreserved characters
// decoded, other escapes in upper case, §5.2.4 dot-segment removal),
// repeated slashes merged, and the result forwarded in place of what was
// sent. The query is never touched.

// PathError is a path the gateway refuses to forward.
type PathError struct {
	// Reason says what is wrong, for the 400 answer.
	Reason string
	// Protected is true when the path, under some reading, names a
	// protected resource: the answer is then RFC 6750 JSON.
	Protected bool
}

func (e *PathError) Error() string { return e.Reason }

// Reasons a path is refused.
var (
	errClimbs          = errors.New("the path climbs above the root with dot segments")
	errControl         = errors.New("the path contains a control character")
	errMalformedEscape = errors.New("the path contains a malformed percent-escape")
	errNotAbsolute     = errors.New("the path is not absolute")
	errEncodedSlash    = errors.New("an encoded slash or backslash (%2F, %5C, \\) is not accepted on this path")
	errDoubleEscape    = errors.New("a double percent-escape (%25xx) is not accepted on this path")
	errDotLike         = errors.New("a segment that some servers read as a dot segment (\"..;\", \".. \", \"...\", look-alike dots) is not accepted on this path")
	errSlashLike       = errors.New("a segment that some servers read as containing a slash or control character is not accepted on this path")
	errBadUTF8         = errors.New("a percent-escape that is not valid UTF-8 is not accepted on this path")
)

// Canonical reads a request path as sent (the escaped request-target
// path) and returns the path to judge and forward, and whether it is a
// protected resource. A refusal is a *PathError.
//
// What is refused, and where:
//   - everywhere: dot segments that climb above the root, control
//     characters (raw or percent-encoded), malformed escapes;
//   - on a path that some reading puts under a protected resource: "%2F",
//     "%5C" or "\", "%25" followed by an escape, segments that some
//     servers read as "." or ".." or as containing a slash, and escapes
//     that are not UTF-8.
//
// Elsewhere an encoded slash is forwarded as it was sent ("/files/a%2Fb"
// stays that), since no reading of such a path concerns the gateway.
func (p *Policy) Canonical(sent string) (canon string, protected bool, err error) {
	switch sent {
	case "*": // OPTIONS * names the server, not a path
		return sent, false, nil
	case "": // an absolute-form target without a path: the root (RFC 9110 §4.2.3)
		return "/", false, nil
	}
	if isCleanPath(sent) {
		// Nothing to decode, fold or resolve: every reading is the path.
		return sent, p.protectedKey(sent), nil
	}
	canon, climbs, err := canonicalize(sent)
	if err != nil {
		return "", false, &PathError{Reason: err.Error(), Protected: p.anyReadingProtected(sent, sent)}
	}
	protected = p.protectedKey(normalizePath(canon))
	relevant := protected || p.anyReadingProtected(sent, canon)
	if climbs {
		return "", false, &PathError{Reason: errClimbs.Error(), Protected: relevant}
	}
	if hasControlEscape(canon) {
		return "", false, &PathError{Reason: errControl.Error(), Protected: relevant}
	}
	if relevant {
		if err := ambiguity(canon); err != nil {
			return "", false, &PathError{Reason: err.Error(), Protected: true}
		}
	}
	return canon, protected, nil
}

// SetRequestPath makes u carry a canonical path such that u.EscapedPath(),
// which net/http and Caddy's reverse proxy put on the wire, is canon byte
// for byte. The query is not touched.
func SetRequestPath(u *url.URL, canon string) error {
	decoded, err := url.PathUnescape(canon)
	if err != nil {
		return err
	}
	u.Path, u.RawPath = decoded, canon
	if (&url.URL{Path: decoded}).EscapedPath() == canon {
		u.RawPath = "" // net/url's own convention for the default spelling
	}
	if got := u.EscapedPath(); got != canon {
		return fmt.Errorf("path %q would be sent as %q", canon, got)
	}
	return nil
}

// anyReadingProtected reports whether a server reading the path more
// loosely than RFC 3986 (see readPath) could land on a protected resource,
// with or without resolving dot segments.
func (p *Policy) anyReadingProtected(sent, canon string) bool {
	for _, s := range []string{sent, canon} {
		// Unresolved, "/admin/api/../x" still starts under the admin
		// prefix: a router that matches prefixes before it resolves dots
		// serves it from the admin handler.
		if p.protectedKey(readPath(s, true)) || p.protectedKey(readPath(s, false)) {
			return true
		}
	}
	return false
}

// protectedKey reports whether a normalized path is a protected resource:
// the Account API (and anything below it, which a prefix-mounted GraphQL
// handler would serve) or the admin API.
func (p *Policy) protectedKey(key string) bool {
	// Anything that starts with the Account API's path, even mid-segment
	// ("/account/graphqlx"): legacy routers that match string prefixes
	// serve it from the GraphQL handler, and nothing else lives there.
	return strings.HasPrefix(key, sitepath.AccountAPI) || underPrefix(key, p.matchKeys().admin)
}

// canonicalize applies RFC 3986 normalization to an absolute path:
// escapes of unreserved characters are decoded, other escapes upper-cased,
// bytes outside pchar escaped, empty segments dropped (a trailing slash
// is kept) and dot segments removed. climbs reports a ".." above the root.
func canonicalize(sent string) (canon string, climbs bool, err error) {
	if !strings.HasPrefix(sent, "/") {
		return "", false, errNotAbsolute
	}
	segs := make([]string, 0, strings.Count(sent, "/"))
	trailing := false
	rest := sent[1:]
	for {
		seg, tail, more := strings.Cut(rest, "/")
		norm, err := normalizeSegment(seg)
		if err != nil {
			return "", false, err
		}
		switch norm {
		case "":
			trailing = !more
		case ".":
			trailing = !more
		case "..":
			if len(segs) == 0 {
				climbs = true
			} else {
				segs = segs[:len(segs)-1]
			}
			trailing = !more
		default:
			segs = append(segs, norm)
			trailing = false
		}
		if !more {
			break
		}
		rest = tail
	}
	var b strings.Builder
	b.Grow(len(sent))
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(s)
	}
	if trailing || len(segs) == 0 {
		b.WriteByte('/')
	}
	return b.String(), climbs, nil
}

const upperHex = "0123456789ABCDEF"

// normalizeSegment decodes escapes of unreserved characters, upper-cases
// the hex of other escapes and escapes every byte that may not stand raw
// in a path segment (RFC 3986 pchar), so that the result is one spelling
// that net/url forwards byte for byte.
func normalizeSegment(seg string) (string, error) {
	if segmentIsNormal(seg) {
		return seg, nil
	}
	var b strings.Builder
	b.Grow(len(seg) + 8)
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case c == '%':
			if i+2 >= len(seg) || !isHex(seg[i+1]) || !isHex(seg[i+2]) {
				return "", errMalformedEscape
			}
			v := unhex(seg[i+1])<<4 | unhex(seg[i+2])
			if isUnreserved(v) {
				b.WriteByte(v)
			} else {
				b.WriteByte('%')
				b.WriteByte(upperHex[v>>4])
				b.WriteByte(upperHex[v&15])
			}
			i += 2
		case isPchar(c):
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		}
	}
	return b.String(), nil
}

// segmentIsNormal reports whether normalizeSegment would return seg as it
// is, without allocating.
func segmentIsNormal(seg string) bool {
	for i := 0; i < len(seg); i++ {
		if c := seg[i]; c == '%' || !isPchar(c) {
			return false
		}
	}
	return true
}

// hasControlEscape reports an escaped control character in a canonical
// path (raw ones were escaped by canonicalize, or refused by net/http).
func hasControlEscape(canon string) bool {
	for i := 0; i+2 < len(canon); i++ {
		if canon[i] == '%' {
			v := unhex(canon[i+1])<<4 | unhex(canon[i+2])
			if v < 0x20 || v == 0x7f {
				return true
			}
		}
	}
	return false
}

// ambiguity finds what, in a canonical path, some server could read
// differently from the gateway: an escaped "/" or "\", an escaped "%"
// that forms another escape, or a segment whose loose reading is a dot
// segment, empty, or holds a slash or control character.
func ambiguity(canon string) error {
	for i := 0; i+2 < len(canon); i++ {
		if canon[i] != '%' {
			continue
		}
		switch canon[i+1 : i+3] {
		case "2F", "5C":
			return errEncodedSlash
		case "25":
			if i+4 < len(canon) && isHex(canon[i+3]) && isHex(canon[i+4]) {
				return errDoubleEscape
			}
		}
	}
	for _, seg := range strings.Split(canon[1:], "/") {
		if seg == "" {
			continue // the trailing slash
		}
		decoded, err := unescape(seg)
		if err != nil {
			return errMalformedEscape
		}
		if !validUTF8(decoded) {
			return errBadUTF8
		}
		loose := looseSegment(decoded)
		switch {
		case loose == "" || loose == "." || loose == "..":
			return errDotLike
		case strings.ContainsAny(loose, "/\\") || containsControl(loose):
			return errSlashLike
		}
	}
	return nil
}

// isPchar reports whether c may stand unescaped in a path segment
// (RFC 3986: unreserved, sub-delims, ":" and "@").
func isPchar(c byte) bool {
	if isUnreserved(c) {
		return true
	}
	switch c {
	case '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '@':
		return true
	}
	return false
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10
	}
	return 0
}
