package policy

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizePath is the key the policy matches on: the loosest reading of
// a path that a legacy server might apply (readPath), so that spelling a
// protected path differently never changes the decision. For a canonical
// path without ambiguity (see ambiguity) it differs from the path only
// within segments: case, ";params", trailing dots and white space.
func normalizePath(p string) string {
	if isCleanPath(p) {
		return p // the common case, without allocating
	}
	return readPath(p, true)
}

// isCleanPath reports whether every reading leaves p as it is: an absolute
// path of lower-case letters, digits, '-', '_' and '.', with no empty, dot
// or dot-ending segment and no trailing slash. Only what readPath
// provably returns unchanged qualifies (FuzzCleanPath).
func isCleanPath(p string) bool {
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' {
		return false
	}
	segStart := 1
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			seg := p[segStart:i]
			if seg == "" || seg[len(seg)-1] == '.' {
				return false
			}
			segStart = i + 1
			continue
		}
		c := p[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// readPath is the loosest reading of a path the gateway guards against:
// percent-decoding up to three times, overlong UTF-8 and Unicode
// compatibility forms folded to ASCII (IIS-style best fit), backslashes as
// slashes, the path cut at the first control character (C string
// handling), case folded, ";params" dropped and trailing dots and white
// space trimmed from each segment, repeated slashes merged and, when
// resolve is set, dot segments resolved.
func readPath(p string, resolve bool) string {
	for i := 0; i < 4; i++ {
		next := readOnce(p, resolve)
		if next == p {
			break
		}
		p = next
	}
	return p
}

func readOnce(p string, resolve bool) string {
	for i := 0; i < 3 && strings.Contains(p, "%"); i++ {
		p = looseUnescape(p)
	}
	p = foldToASCII(p)
	p = strings.ReplaceAll(p, "\\", "/")
	if i := strings.IndexFunc(p, isControl); i >= 0 {
		p = p[:i]
	}
	segs := strings.Split(strings.ToLower(p), "/")
	kept := segs[:0]
	for _, s := range segs {
		if s = trimSegment(s); s != "" {
			kept = append(kept, s)
		}
	}
	joined := "/" + strings.Join(kept, "/")
	if resolve {
		return path.Clean(joined)
	}
	return joined
}

// looseSegment is readPath for one decoded segment, without cutting at
// control characters (the caller refuses those).
func looseSegment(seg string) string {
	for i := 0; i < 2 && strings.Contains(seg, "%"); i++ {
		seg = looseUnescape(seg)
	}
	return trimSegment(foldToASCII(seg))
}

// trimSegment drops ";params" and leading and trailing white space, and
// trailing dots unless the segment is a dot segment.
func trimSegment(s string) string {
	s, _, _ = strings.Cut(s, ";")
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	if s == "." || s == ".." {
		return s
	}
	// Dots and white space in any order, in one pass, so that the fold
	// converges ("a\r.\r." is "a").
	return strings.TrimRightFunc(s, func(r rune) bool { return r == '.' || unicode.IsSpace(r) })
}

// looseUnescape decodes every well-formed %XX and keeps a '%' that starts
// none, as lenient servers do.
func looseUnescape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescape decodes a canonical segment strictly.
func unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && (i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2])) {
			return "", errMalformedEscape
		}
	}
	return looseUnescape(s), nil
}

// foldToASCII maps what some servers treat as ASCII to it: overlong UTF-8
// encodings ("%C0%AE" is "."), and Unicode compatibility forms under NFKC
// ("．", "․", "／", "＼") plus the slash look-alikes Windows' best-fit
// mapping turns into "/".
func foldToASCII(s string) string {
	if isASCII(s) {
		return s
	}
	s = decodeOverlong(s)
	s = norm.NFKC.String(s)
	return slashLookalikes.Replace(s)
}

var slashLookalikes = strings.NewReplacer("\u2215", "/", "\u2044", "/", "\u29f8", "/", "\u29f9", "\\", "\u2216", "\\")

// decodeOverlong replaces overlong UTF-8 sequences of ASCII characters,
// which strict decoders reject and lenient ones read as the character.
func decodeOverlong(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case (c == 0xC0 || c == 0xC1) && i+1 < len(s) && isCont(s[i+1]):
			b.WriteByte((c&1)<<6 | s[i+1]&0x3F)
			i++
		case c == 0xE0 && i+2 < len(s) && s[i+1]&0xE0 == 0x80 && s[i+1] <= 0x81 && isCont(s[i+2]):
			b.WriteByte((s[i+1]&1)<<6 | s[i+2]&0x3F)
			i += 2
		case c == 0xF0 && i+3 < len(s) && s[i+1] == 0x80 && s[i+2] <= 0x81 && isCont(s[i+2]) && isCont(s[i+3]):
			b.WriteByte((s[i+2]&1)<<6 | s[i+3]&0x3F)
			i += 3
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isCont(c byte) bool { return c&0xC0 == 0x80 }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func validUTF8(s string) bool { return utf8.ValidString(s) }

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func containsControl(s string) bool { return strings.IndexFunc(s, isControl) >= 0 }
