package pages

import (
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/i18n"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// The pages are written in the languages of package i18n, chosen for
// each request by the browser's Accept-Language and the school's
// language; they reach the messages through one template function, t.

// pageLang is the language of the page answering r.
func (p *Pages) pageLang(r *http.Request) string {
	school := i18n.Languages[0]
	if p.cfg.SchoolLanguage != nil {
		school = p.cfg.SchoolLanguage()
	}
	if r == nil {
		return i18n.Choose("", school)
	}
	return i18n.Choose(r.Header.Get("Accept-Language"), school)
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

// msgHTML is a message for a page: the text and plain values are
// escaped, values of type template.HTML (made by the el function) are put
// in as they are, so that a placeholder can carry its own element.
func msgHTML(lang, key string, args ...any) template.HTML {
	return template.HTML(i18n.Expand(lang, key, args, template.HTMLEscapeString, func(v any) string {
		if h, ok := v.(template.HTML); ok {
			return string(h)
		}
		return template.HTMLEscapeString(fmt.Sprint(v))
	}))
}

// msg is the message key in lang, as plain text.
func msg(lang, key string, args ...any) string { return i18n.Msg(lang, key, args...) }

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
	if i18n.Has("scope." + scope) {
		return msg(lang, "scope."+scope)
	}
	area, access, _ := strings.Cut(scope, ":")
	words := strings.ReplaceAll(area, "_", " ")
	if i18n.Has("area." + area) {
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

// kindWords says in lang what kind of application a client of kind is.
func kindWords(lang, kind, clientID string) string {
	switch kind {
	case store.KindVendor:
		return msg(lang, "kind.vendor")
	case store.KindApp:
		return msg(lang, "kind.app")
	case store.KindMetadata:
		return msg(lang, "kind.metadata", "host", hostOf(clientID))
	case store.KindLoopback:
		return msg(lang, "kind.loopback")
	}
	return msg(lang, "kind.gone")
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
