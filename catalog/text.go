package catalog

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// maxWordBytes bounds the words that are stemmed and matched fuzzily: no
// language has longer ones, and a longer "word" (a pasted hash, a run of
// letters) would only cost time.
const maxWordBytes = 64

// splitWords calls fn with each word of s. A word is a run of letters,
// digits and combining marks (so that a decomposed "é" stays inside its
// word); anything else separates words, so "long-exposure" and
// "long exposure" read alike. Invalid UTF-8 decodes to U+FFFD, a
// separator. s should be NFKC-normalized first (see compatText).
func splitWords(s string, fn func(word string)) {
	start := -1
	for i, r := range s {
		in := r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') ||
			r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r))
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			fn(s[start:i])
			start = -1
		}
	}
	if start >= 0 {
		fn(s[start:])
	}
}

// compatText applies NFKC to text that is not plain ASCII, so that
// ligatures ("ﬁ"), full-width letters and other compatibility forms read
// as the letters people type.
func compatText(s string) string {
	if isASCII(s) {
		return s
	}
	return norm.NFKC.String(s)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lowerWord case-folds a word (Unicode full case folding: "Straße" becomes
// "strasse", as a German reader would accept). Stemmers get this form:
// they need the accents.
func lowerWord(w string) string {
	if isASCII(w) {
		for i := 0; i < len(w); i++ {
			if c := w[i]; c >= 'A' && c <= 'Z' {
				return strings.ToLower(w)
			}
		}
		return w
	}
	// A Caser keeps state between calls, so each word gets its own.
	return norm.NFC.String(cases.Fold().String(w))
}

// foldWord removes diacritics from a case-folded word, so that "Tomas"
// finds "Tomás" and "cafe" finds "Café": agents and keyboards often drop
// accents.
func foldWord(w string) string {
	if isASCII(w) {
		return w
	}
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	out, _, err := transform.String(t, w)
	if err != nil {
		return w
	}
	if strings.IndexFunc(out, func(r rune) bool { return unfoldable[r] != "" }) < 0 {
		return out
	}
	var b strings.Builder
	for _, r := range out {
		if s := unfoldable[r]; s != "" {
			b.WriteString(s)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unfoldable are letters that Unicode does not decompose into a base
// letter and a mark, written the way people type them without the
// special letter.
var unfoldable = map[rune]string{
	'ø': "o", 'đ': "d", 'ð': "d", 'ħ': "h", 'ł': "l", 'ŧ': "t", 'ı': "i",
	'æ': "ae", 'œ': "oe", 'þ': "th",
}

// hasDigit reports whether w contains an ASCII or other decimal digit.
func hasDigit(w string) bool {
	return strings.IndexFunc(w, unicode.IsDigit) >= 0
}
