package authserver

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/language"

	"github.com/schoolgate/schoolgate/policy"
)

// The pages people read are written in the languages the schools teach
// in. Each language's messages are one flat file under pages/messages
// (key → text, {name} marking a value put in); the pages reach them
// through one template function, t. English is the reference: every
// other file has its keys, with the same placeholders.

// Languages are the languages of the pages, as base BCP 47 tags; the
// first, English, is the last fallback.
var Languages = []string{"en", "de", "fr", "it", "es", "pt"}

// IsLanguage reports whether the pages are written in lang.
func IsLanguage(lang string) bool { return slices.Contains(Languages, lang) }

var messages = loadMessages()

var langMatcher = func() language.Matcher {
	tags := make([]language.Tag, len(Languages))
	for i, l := range Languages {
		tags[i] = language.Make(l)
	}
	return language.NewMatcher(tags)
}()

// loadMessages reads every language's file; a missing or unreadable one
// panics, which every test run catches: the files are part of the binary.
func loadMessages() map[string]map[string]string {
	all := make(map[string]map[string]string, len(Languages))
	for _, l := range Languages {
		raw, err := pageFiles.ReadFile("pages/messages/" + l + ".json")
		if err != nil {
			panic(err)
		}
		m := map[string]string{}
		if err := json.Unmarshal(raw, &m); err != nil {
			panic(fmt.Sprintf("pages/messages/%s.json: %v", l, err))
		}
		all[l] = m
	}
	return all
}

// chooseLanguage picks the page's language: the best of the browser's
// Accept-Language (its q-values respected) that the pages are written
// in, else fallback (the school's language).
func chooseLanguage(acceptLanguage, fallback string) string {
	if !IsLanguage(fallback) {
		fallback = Languages[0]
	}
	prefs, _, err := language.ParseAcceptLanguage(acceptLanguage)
	if err != nil || len(prefs) == 0 {
		return fallback
	}
	_, i, conf := langMatcher.Match(prefs...)
	if conf == language.No {
		return fallback
	}
	return Languages[i]
}

// pageLang is the language of the page answering r.
func (s *Server) pageLang(r *http.Request) string {
	school := Languages[0]
	if s.cfg.SchoolLanguage != nil {
		school = s.cfg.SchoolLanguage()
	}
	if r == nil {
		return chooseLanguage("", school)
	}
	return chooseLanguage(r.Header.Get("Accept-Language"), school)
}

// setLanguageHeaders says which language the page is in, and that
// another Accept-Language may get another page.
func setLanguageHeaders(w http.ResponseWriter, lang string) {
	h := w.Header()
	h.Set("Content-Language", lang)
	for _, v := range h.Values("Vary") {
		if strings.Contains(v, "Accept-Language") {
			return
		}
	}
	h.Add("Vary", "Accept-Language")
}

// placeholder is a {name} in a message.
var placeholder = regexp.MustCompile(`\{[a-z_]+\}`)

// msg is the message key in lang with its placeholders filled from args,
// name-value pairs; a key missing in lang falls back to English, and
// one missing in English is the key itself (the completeness test
// fails on both).
func msg(lang, key string, args ...any) string {
	text, ok := messages[lang][key]
	if !ok {
		if text, ok = messages[Languages[0]][key]; !ok {
			return key
		}
	}
	if len(args) == 0 {
		return text
	}
	vals := placeholderValues(args, func(v any) string { return fmt.Sprint(v) })
	return placeholder.ReplaceAllStringFunc(text, func(p string) string {
		if v, ok := vals[p]; ok {
			return v
		}
		return p
	})
}

// msgHTML is msg for a page: the text and plain values are escaped,
// values of type template.HTML (made by the el function) are put in as
// they are, so that a placeholder can carry its own element.
func msgHTML(lang, key string, args ...any) template.HTML {
	text, ok := messages[lang][key]
	if !ok {
		if text, ok = messages[Languages[0]][key]; !ok {
			text = key
		}
	}
	vals := placeholderValues(args, func(v any) string {
		if h, ok := v.(template.HTML); ok {
			return string(h)
		}
		return template.HTMLEscapeString(fmt.Sprint(v))
	})
	var b strings.Builder
	last := 0
	for _, m := range placeholder.FindAllStringIndex(text, -1) {
		b.WriteString(template.HTMLEscapeString(text[last:m[0]]))
		if v, ok := vals[text[m[0]:m[1]]]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(template.HTMLEscapeString(text[m[0]:m[1]]))
		}
		last = m[1]
	}
	b.WriteString(template.HTMLEscapeString(text[last:]))
	return template.HTML(b.String())
}

func placeholderValues(args []any, str func(any) string) map[string]string {
	vals := make(map[string]string, len(args)/2)
	for i := 0; i+1 < len(args); i += 2 {
		vals["{"+fmt.Sprint(args[i])+"}"] = str(args[i+1])
	}
	return vals
}

// el is an element around escaped text, for a message's placeholder:
// {{t "key" "name" (el "strong" "id" .Name)}}. id may be "".
func el(tag, id string, text any) template.HTML {
	attr := ""
	if id != "" {
		attr = ` id="` + template.HTMLEscapeString(id) + `"`
	}
	return template.HTML("<" + tag + attr + ">" + template.HTMLEscapeString(fmt.Sprint(text)) + "</" + tag + ">")
}

// link is an a element to one of the site's own paths; text is a
// message already rendered (msgHTML escapes its arguments).
func link(href, id string, text template.HTML) template.HTML {
	attr := ` href="` + template.HTMLEscapeString(href) + `"`
	if id != "" {
		attr += ` id="` + template.HTMLEscapeString(id) + `"`
	}
	return template.HTML("<a" + attr + ">" + string(text) + "</a>")
}

// pageFuncs are the template functions of the pages in lang.
func pageFuncs(lang string) template.FuncMap {
	return template.FuncMap{
		"stylesheet": func() string { return stylesheetPath },
		"lang":       func() string { return lang },
		"t":          func(key string, args ...any) template.HTML { return msgHTML(lang, key, args...) },
		"el":         el,
		"link":       link,
		"scope":      func(scope string) string { return scopeWords(lang, scope) },
		"summary":    func(scopes []string) string { return scopeSummaryWords(lang, scopes) },
		"kind":       func(kind, clientID string) string { return kindWords(lang, kind, clientID) },
		"when":       func(t time.Time, now time.Time) template.HTML { return when(lang, t, now) },
		// text is a message as plain text, for an attribute or an el.
		"text": func(key string, args ...any) string { return msg(lang, key, args...) },
	}
}

// scopeWords says in plain words, in lang, what a scope grants: a
// scope's own message, else its area's in the read/write sentence.
func scopeWords(lang, scope string) string {
	if _, ok := messages[Languages[0]]["scope."+scope]; ok {
		return msg(lang, "scope."+scope)
	}
	area, access, _ := strings.Cut(scope, ":")
	words := strings.ReplaceAll(area, "_", " ")
	if _, ok := messages[Languages[0]]["area."+area]; ok {
		words = msg(lang, "area."+area)
	}
	switch {
	case access == "read":
		return msg(lang, "scope.read", "area", words)
	case access == "write" && policy.WriteIncludesRead(scope):
		return msg(lang, "scope.readwrite", "area", words)
	case access == "write":
		return msg(lang, "scope.write", "area", words)
	}
	return scope
}

// when is a moment for a person: relative while recent ("3 days ago"),
// else the date, in lang; the exact time is the element's title and its
// datetime.
func when(lang string, t, now time.Time) template.HTML {
	if t.IsZero() {
		return template.HTML(template.HTMLEscapeString(msg(lang, "time.unknown")))
	}
	t = t.UTC()
	exact := msg(lang, "time.exact", "date", longDate(lang, t), "time", t.Format("15:04"))
	return template.HTML(`<time datetime="` + t.Format(time.RFC3339) + `" title="` +
		template.HTMLEscapeString(exact) + `">` + template.HTMLEscapeString(relative(lang, t, now)) + `</time>`)
}

// relative is how long ago t was, in the largest whole unit, for the
// last four weeks; before that (or in the future, a clock apart) the
// date.
func relative(lang string, t, now time.Time) string {
	d := now.Sub(t)
	unit := func(n int64, name string) string {
		key := "time." + name + "_ago"
		if n == 1 {
			key += ".one"
		}
		return msg(lang, key, "n", strconv.FormatInt(n, 10))
	}
	switch {
	case d < -time.Minute || d >= 28*24*time.Hour:
		return longDate(lang, t)
	case d < time.Minute:
		return msg(lang, "time.just_now")
	case d < time.Hour:
		return unit(int64(d/time.Minute), "minutes")
	case d < 24*time.Hour:
		return unit(int64(d/time.Hour), "hours")
	}
	return unit(int64(d/(24*time.Hour)), "days")
}

// longDate is t's date in lang: "25 November 2026", "25. November 2026".
func longDate(lang string, t time.Time) string {
	return msg(lang, "date.long", "day", strconv.Itoa(t.Day()),
		"month", msg(lang, "month."+strconv.Itoa(int(t.Month()))), "year", strconv.Itoa(t.Year()))
}
