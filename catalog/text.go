package catalog

import (
	"strings"
	"unicode"
)

// foldTable maps lowercase Latin letters with diacritics to their base
// letters, so that "Tomas" finds "Tomás" and "cafe" finds "Café": agents
// and keyboards often drop accents. Full Unicode
// normalization would need golang.org/x/text; this covers the Latin
// scripts course schools actually use.
var foldTable = buildFoldTable(map[string]string{
	"a":  "àáâãäåāăąǎ",
	"c":  "çćĉċč",
	"d":  "ďđð",
	"e":  "èéêëēĕėęě",
	"g":  "ĝğġģ",
	"h":  "ĥħ",
	"i":  "ìíîïĩīĭįı",
	"j":  "ĵ",
	"k":  "ķ",
	"l":  "ĺļľŀł",
	"n":  "ñńņňŉ",
	"o":  "òóôõöøōŏőǒ",
	"r":  "ŕŗř",
	"s":  "śŝşšș",
	"t":  "ţťŧț",
	"u":  "ùúûüũūŭůűųǔ",
	"w":  "ŵ",
	"y":  "ýÿŷ",
	"z":  "źżž",
	"ae": "æ",
	"oe": "œ",
	"ss": "ß",
	"th": "þ",
})

func buildFoldTable(groups map[string]string) map[rune]string {
	t := make(map[rune]string)
	for base, accented := range groups {
		for _, r := range accented {
			t[r] = base
		}
	}
	return t
}

// tokens splits s into lowercase, accent-folded words. Anything that is
// not a letter or digit separates words, so "long-exposure" and
// "long exposure" index alike.
func tokens(s string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		r = unicode.ToLower(r)
		if r < 0x80 {
			b.WriteRune(r)
		} else if base, ok := foldTable[r]; ok {
			b.WriteString(base)
		} else {
			b.WriteRune(r)
		}
	}
	flush()
	return out
}

// normalize is tokens joined by single spaces, for phrase matching.
func normalize(s string) string {
	return strings.Join(tokens(s), " ")
}
