package sitedocs

import (
	"encoding/json"
	"math"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/schoolgate/schoolgate/catalog"
)

// Everything a catalog feed says is untrusted: a title must stay a title,
// whatever characters it holds. cleanText makes it one line of printable
// text; escapeMarkdown then makes every Markdown-significant character
// literal, so no feed value can open a link, an image, raw HTML, code or
// emphasis, or start a heading, list or quote.

// cleanText drops control and bidirectional-formatting characters, turns
// line breaks and other whitespace into single spaces, replaces invalid
// UTF-8 and trims the result.
func cleanText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s { // invalid UTF-8 arrives as utf8.RuneError
		switch {
		case unicode.IsSpace(r) || r == '\u2028' || r == '\u2029':
			space = b.Len() > 0
			continue
		case unicode.IsControl(r) || isBidiControl(r) || r == '\ufeff':
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// PlainLine is a feed value fit to show as one line anywhere (a page, a
// document, MCP instructions): cleanText, at most n characters.
func PlainLine(s string, n int) string { return truncate(cleanText(s), n) }

// isBidiControl reports the formatting characters that reorder text when
// displayed, so that what a reader sees differs from what is there.
func isBidiControl(r rune) bool {
	return r == '\u061c' || r == '\u200e' || r == '\u200f' ||
		(r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069')
}

// escapeMarkdown returns s as one line of Markdown text that renders as s
// (after cleanText) and nothing else. Characters that open inline
// constructs anywhere are always escaped; those that only matter at the
// start of a line are escaped there (the result may be placed at the start
// of a line or of a block quote); "://" and "www." are broken up so GFM
// does not autolink a URL that a title merely contains.
func escapeMarkdown(s string) string {
	s = cleanText(s)
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	lead := leadingMarker(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(s, i, lead) {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// leadingMarker is the index of the byte that would make s start a block
// when placed at the start of a line (heading, bullet or ordered list,
// quote, thematic break, setext underline), or -1. Indented code cannot
// happen: cleanText trims leading spaces.
func leadingMarker(s string) int {
	if s == "" {
		return -1
	}
	switch s[0] {
	case '#', '+', '-', '=', '>':
		return 0
	}
	i := 0
	for i < len(s) && i < 10 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')') {
		return i
	}
	return -1
}

func needsEscape(s string, i, lead int) bool {
	c := s[i]
	switch c {
	case '\\', '`', '*', '_', '[', ']', '<', '>', '|', '~':
		return true
	case '&':
		// Only an entity or character reference can come of it.
		return i+1 < len(s) && (s[i+1] == '#' || isASCIIAlnum(s[i+1]))
	case '(':
		// "](" after an escaped bracket still trips some renderers
		// (marked) into an inner link.
		return i > 0 && s[i-1] == ']'
	case ':':
		return strings.HasPrefix(s[i+1:], "//")
	case '.':
		if i >= 3 && strings.EqualFold(s[i-3:i], "www") {
			return true
		}
	case '@':
		// user@host is an e-mail autolink in GFM.
		return i > 0 && i+1 < len(s) && isASCIIAlnum(s[i-1]) && isASCIIAlnum(s[i+1])
	}
	return i == lead
}

func isASCIIAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// truncate shortens s to at most n runes, ending with an ellipsis when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut := 0
	for i := range s {
		if n == 0 {
			cut = i
			break
		}
		n--
	}
	return strings.TrimRight(s[:cut], " ") + "…"
}

// mdText is escapeMarkdown after truncating the clean text to n runes, so
// the cut never splits an escape.
func mdText(s string, n int) string {
	return escapeMarkdown(truncate(cleanText(s), n))
}

// linkDestination makes an absolute http(s) URL safe as a Markdown link
// destination: characters that could end the destination or the link are
// percent-encoded. It reports false for anything that is not an absolute
// http(s) URL with a plain ASCII host.
func linkDestination(raw string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "", false
	}
	for i := 0; i < len(u.Host); i++ {
		c := u.Host[i]
		if !isASCIIAlnum(c) && !strings.ContainsRune(".-:[]", rune(c)) {
			return "", false
		}
	}
	s := u.String()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 0x20 || c >= 0x7f || strings.IndexByte("()<>[]\"'`\\|*_", c) >= 0 {
			b.WriteString("%")
			b.WriteString(strings.ToUpper(strconv.FormatUint(uint64(c)>>4, 16)))
			b.WriteString(strings.ToUpper(strconv.FormatUint(uint64(c)&0xf, 16)))
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// itemPaths are where the legacy site shows each kind of item.
const (
	coursePath  = "/courses/"
	eventPath   = "/events/"
	planPath    = "/memberships/"
	productPath = "/products/"
)

// itemURL is an item's public page: its own "url" field when that is an
// absolute http(s) URL, else the page on the site. "" when there is none.
func itemURL(issuer, kindPath, slug string, extra map[string]json.RawMessage) string {
	if raw, ok := extra["url"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if d, ok := linkDestination(s); ok {
				return d
			}
		}
	}
	if strings.TrimSpace(slug) == "" {
		return ""
	}
	d, _ := linkDestination(issuer + kindPath + url.PathEscape(slug))
	return d
}

// link renders [label](url), or the bare label when there is no URL. The
// label is escaped here; dest must come from linkDestination or itemURL.
func link(label, dest string) string {
	if dest == "" {
		return label
	}
	return "[" + label + "](" + dest + ")"
}

// minorUnits are the ISO 4217 currencies whose minor unit is not 1/100.
var minorUnits = map[string]int{
	"BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0,
	"PYG": 0, "RWF": 0, "UGX": 0, "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
	"BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
	"CLF": 4, "UYW": 4,
}

// priceInfo is what a document says about an item's price.
type priceInfo struct {
	known bool
	free  bool
	text  string // e.g. "49.00 EUR" or "free"
}

// formatPrice renders an amount in the currency's main unit with the
// currency's usual number of decimals: "49.00 EUR", "1200 JPY", "free".
func formatPrice(amount float64, currency string) priceInfo {
	if amount == 0 {
		return priceInfo{known: true, free: true, text: "free"}
	}
	cur := strings.ToUpper(cleanText(currency))
	decimals, ok := minorUnits[cur]
	if !ok {
		decimals = 2
	}
	if math.IsNaN(amount) || math.IsInf(amount, 0) {
		return priceInfo{}
	}
	s := strconv.FormatFloat(amount, 'f', decimals, 64)
	if cur == "" {
		return priceInfo{known: true, text: s}
	}
	return priceInfo{known: true, text: s + " " + escapeMarkdown(truncate(cur, 8))}
}

func priceOf(p *catalog.Price) priceInfo {
	if p == nil {
		return priceInfo{text: "price not listed"}
	}
	pi := formatPrice(p.Amount, p.Currency)
	if !pi.known {
		pi.text = "price not listed"
	}
	return pi
}
