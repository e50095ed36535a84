package sitedocs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/schoolgate/schoolgate/catalog"
)

func TestEscapeMarkdown(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Photography Fundamentals", "Photography Fundamentals"},
		{"Winter Light Photo Walk, Berlin", "Winter Light Photo Walk, Berlin"},
		{"Your Year in Pictures: Live Review", "Your Year in Pictures: Live Review"},
		{"Q & A", "Q & A"},
		{"Tomás' 50% off (today)", "Tomás' 50% off (today)"},
		{"[click](https://evil.example)", `\[click\]\(https\://evil.example)`},
		{"![img](x)", `!\[img\]\(x)`},
		{"<script>alert(1)</script>", `\<script\>alert(1)\</script\>`},
		{"`code`", "\\`code\\`"},
		{"*bold* _it_ ~~del~~", `\*bold\* \_it\_ \~\~del\~\~`},
		{"a | b", `a \| b`},
		{`back\slash`, `back\\slash`},
		{"# Heading", `\# Heading`},
		{"Course #1", "Course #1"},
		{"- item", `\- item`},
		{"Multi-day", "Multi-day"},
		{"+ item", `\+ item`},
		{"> quote", `\> quote`},
		{"=== ", `\===`},
		{"1. First", `1\. First`},
		{"2024) Year", `2024\) Year`},
		{"Version 1. of 2", "Version 1. of 2"},
		{"www.evil.example", `www\.evil.example`},
		{"WWW.EVIL.EXAMPLE", `WWW\.EVIL.EXAMPLE`},
		{"mail me@evil.example", `mail me\@evil.example`},
		{"&amp; &#60; &", `\&amp; \&#60; &`},
		{"line\nbreak\r\n\tand  spaces ", "line break and spaces"},
		{"bidi \u202egnp.exe\u202c", "bidi gnp.exe"},
		{"nul\x00bell\x07del\x7f", "nulbelldel"},
		{"bad \xff utf8", "bad \ufffd utf8"},
		{"", ""},
		{"   ", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := escapeMarkdown(tc.in); got != tc.want {
				t.Errorf("escapeMarkdown(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// unescapeMarkdown undoes backslash escapes of ASCII punctuation, as a
// CommonMark renderer does for text.
func unescapeMarkdown(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isASCIIPunct(c byte) bool {
	return c < 0x80 && unicode.IsPunct(rune(c)) || c < 0x80 && unicode.IsSymbol(rune(c))
}

// FuzzMarkdownEscape checks the properties the documents rely on for any
// feed text: one line of valid UTF-8 without control or bidi characters,
// every significant character escaped, and nothing lost (a renderer's
// unescaping gives back the cleaned text).
func FuzzMarkdownEscape(f *testing.F) {
	for _, s := range []string{
		"Photography Fundamentals", "[x](https://e.example)", "<b>hi</b>", "# h", "1. a", "a\nb",
		"\\", "`", "www.x.y", "a@b.c", "&amp;", "\u202e", "\xff", "]( ", "2024)", "- ", "+", "=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := escapeMarkdown(in)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8: %q", out)
		}
		for _, r := range out {
			if unicode.IsControl(r) || isBidiControl(r) || r == '\n' || r == '\r' {
				t.Fatalf("control character %U in %q", r, out)
			}
		}
		if out != strings.TrimSpace(out) {
			t.Fatalf("untrimmed: %q", out)
		}
		for i := 0; i < len(out); i++ {
			c := out[i]
			if c == '\\' {
				if i+1 >= len(out) || !isASCIIPunct(out[i+1]) {
					t.Fatalf("dangling backslash at %d in %q", i, out)
				}
				i++
				continue
			}
			if strings.IndexByte("`*_[]<>|~", c) >= 0 {
				t.Fatalf("unescaped %q at %d in %q", c, i, out)
			}
			if c == '(' && i > 0 && out[i-1] == ']' {
				t.Fatalf("unescaped ]( at %d in %q", i, out)
			}
		}
		if out != "" && strings.IndexByte("#+-=>", out[0]) >= 0 {
			t.Fatalf("block marker at the start of %q", out)
		}
		if containsUnescaped(out, "://") || strings.Contains(strings.ToLower(out), "www.") {
			t.Fatalf("autolink trigger in %q", out)
		}
		if got, want := unescapeMarkdown(out), cleanText(in); got != want {
			t.Fatalf("round trip: %q -> %q -> %q, want %q", in, out, got, want)
		}
	})
}

func TestTruncateAndMdText(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer sentence", 8, "a longer…"},
		{"äöüäöüäöü", 3, "äöü…"},
		{"[[[[[", 2, `\[\[…`},
	}
	for _, tc := range tests {
		if got := mdText(tc.in, tc.n); got != tc.want {
			t.Errorf("mdText(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestFormatPrice(t *testing.T) {
	tests := []struct {
		price *catalog.Price
		want  string
	}{
		{&catalog.Price{Amount: 49, Currency: "EUR"}, "49.00 EUR"},
		{&catalog.Price{Amount: 12.5, Currency: "usd"}, "12.50 USD"},
		{&catalog.Price{Amount: 0.1 + 0.2, Currency: "EUR"}, "0.30 EUR"},
		{&catalog.Price{Amount: 0, Currency: "EUR"}, "free"},
		{&catalog.Price{Amount: 1200, Currency: "JPY"}, "1200 JPY"},
		{&catalog.Price{Amount: 1.2346, Currency: "KWD"}, "1.235 KWD"},
		{&catalog.Price{Amount: 5}, "5.00"},
		{&catalog.Price{Amount: 5, Currency: "<b>"}, `5.00 \<B\>`},
		{nil, "price not listed"},
	}
	for _, tc := range tests {
		if got := priceOf(tc.price).text; got != tc.want {
			t.Errorf("priceOf(%+v) = %q, want %q", tc.price, got, tc.want)
		}
	}
}

func TestLinkDestination(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"https://school.example/courses/a", "https://school.example/courses/a", true},
		{"http://school.example:8080/x?y=1", "http://school.example:8080/x?y=1", true},
		{"https://ok.example/a)[b](c)", "https://ok.example/a%29%5Bb%5D%28c%29", true},
		{"https://ok.example/a b<c>", "https://ok.example/a%20b%3Cc%3E", true},
		{"javascript:alert(1)", "", false},
		{"data:text/html,hi", "", false},
		{"/relative", "", false},
		{"https://", "", false},
		{"https://exa\u00e4mple.com/", "", false},
	}
	for _, tc := range tests {
		got, ok := linkDestination(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("linkDestination(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestItemURL(t *testing.T) {
	tests := []struct {
		name  string
		slug  string
		extra map[string]json.RawMessage
		want  string
	}{
		{"slug", "intro", nil, testIssuer + "/courses/intro"},
		{"slug escaped", "a b/c", nil, testIssuer + "/courses/a%20b%2Fc"},
		{"own url", "x", map[string]json.RawMessage{"url": rawJSON("https://elsewhere.example/c")}, "https://elsewhere.example/c"},
		{"relative url ignored", "x", map[string]json.RawMessage{"url": rawJSON("/c")}, testIssuer + "/courses/x"},
		{"non-string url ignored", "x", map[string]json.RawMessage{"url": rawJSON(42)}, testIssuer + "/courses/x"},
		{"no slug", " ", nil, ""},
	}
	for _, tc := range tests {
		if got := itemURL(testIssuer, coursePath, tc.slug, tc.extra); got != tc.want {
			t.Errorf("%s: itemURL = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestEventWhenAndIntervals(t *testing.T) {
	whens := []struct {
		start, end, want string
	}{
		{"2026-12-12T14:00:00+01:00", "2026-12-12T17:00:00+01:00", "2026-12-12 14:00–17:00 (UTC+01:00)"},
		{"2027-03-13T10:00:00+01:00", "2027-03-14T16:00:00+01:00", "2027-03-13 10:00 to 2027-03-14 16:00 (UTC+01:00)"},
		{"2027-03-27T10:00:00+01:00", "2027-03-29T10:00:00+02:00", "2027-03-27 10:00 (UTC+01:00) to 2027-03-29 10:00 (UTC+02:00)"},
		{"2027-01-20T18:00:00Z", "", "2027-01-20 18:00 (UTC)"},
		{"2027-01-20", "", "2027-01-20 00:00 (UTC)"},
		{"next *Tuesday*", "", `next \*Tuesday\*`},
		{"", "", "date not listed"},
	}
	for _, tc := range whens {
		e := event{Event: catalog.Event{StartsAt: tc.start, EndsAt: tc.end}, start: parseWhen(tc.start), end: parseWhen(tc.end)}
		if got := e.when(); got != tc.want {
			t.Errorf("when(%q, %q) = %q, want %q", tc.start, tc.end, got, tc.want)
		}
	}
	intervals := map[string]string{
		"month": "per month", "Monthly": "per month", "year": "per year", "annual": "per year",
		"week": "per week", "": "", "2 months": "every 2 months", "[x](y)": `every \[x\]\(y)`,
	}
	for in, want := range intervals {
		if got := intervalText(in); got != want {
			t.Errorf("intervalText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUpcomingEvents(t *testing.T) {
	feed := &catalog.Feed{Events: []catalog.Event{
		{Slug: "ended", StartsAt: "2026-05-01T10:00:00Z", EndsAt: "2026-05-01T12:00:00Z"},
		{Slug: "running", StartsAt: "2026-05-30T10:00:00Z", EndsAt: "2026-06-05T12:00:00Z"},
		{Slug: "undated", StartsAt: "soon"},
		{Slug: "later", StartsAt: "2026-09-01T10:00:00Z"},
		{Slug: "started-no-end", StartsAt: "2026-06-01T11:00:00Z"},
	}}
	got, past := upcomingEvents(feed, testNow)
	var slugs []string
	for _, e := range got {
		slugs = append(slugs, e.Slug)
	}
	if strings.Join(slugs, " ") != "running later undated" || past != 2 {
		t.Errorf("upcoming = %v, past %d", slugs, past)
	}
	all, past := upcomingEvents(feed, time.Time{})
	if len(all) != 5 || past != 0 {
		t.Errorf("zero now: %d events, %d past", len(all), past)
	}
}

func TestPlainLine(t *testing.T) {
	for in, want := range map[string]string{
		"Demo School":                    "Demo School",
		"  Demo\n\tSchool \u202eloohcS ": "Demo School loohcS",
		"evil\u200f\x00name":             "evilname",
		strings.Repeat("a", 130):         strings.Repeat("a", 120) + "…",
		"\u2066\u2069":                   "",
	} {
		if got := PlainLine(in, 120); got != want {
			t.Errorf("PlainLine(%q) = %q, want %q", in, got, want)
		}
	}
}
