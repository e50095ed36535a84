// Package i18n is the words of the gateway's pages in the languages the
// schools teach in. Each language's messages are one flat file under
// messages/ (key → text, {name} marking a value put in); English is the
// reference: every other file has its keys, with the same placeholders.
// The pages (package pages) put the messages into HTML; the authorization
// server words the operator's input errors with them (authserver's
// InputError), so that the admin API says them in English and the admin
// area in the operator's language. Plain text only: escaping is the
// pages' business.
package i18n

import (
	"embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/text/language"
)

// Languages are the languages of the pages, as base BCP 47 tags; the
// first, English, is the last fallback.
var Languages = []string{"en", "de", "fr", "it", "es", "pt"}

// IsLanguage reports whether the pages are written in lang.
func IsLanguage(lang string) bool { return slices.Contains(Languages, lang) }

//go:embed messages
var files embed.FS

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
		raw, err := files.ReadFile("messages/" + l + ".json")
		if err != nil {
			panic(err)
		}
		m := map[string]string{}
		if err := json.Unmarshal(raw, &m); err != nil {
			panic(fmt.Sprintf("messages/%s.json: %v", l, err))
		}
		all[l] = m
	}
	return all
}

// Choose picks a page's language: the best of the browser's
// Accept-Language (its q-values respected) that the pages are written
// in, else fallback (the school's language), else English.
func Choose(acceptLanguage, fallback string) string {
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

// Has reports whether the catalog has the message key (in English, the
// reference, so in every language).
func Has(key string) bool {
	_, ok := messages[Languages[0]][key]
	return ok
}

// placeholder is a {name} in a message.
var placeholder = regexp.MustCompile(`\{[a-z_]+\}`)

// Msg is the message key in lang with its placeholders filled from args,
// name-value pairs; a key missing in lang falls back to English, and
// one missing in English is the key itself (the completeness test
// fails on both).
func Msg(lang, key string, args ...any) string {
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

// Expand is Msg for a page: the message's own text goes through text
// (an escaper), each value of args through value, and a placeholder args
// does not name through text as it stands, so that a value can carry
// markup of its own that the message's text cannot.
func Expand(lang, key string, args []any, text func(string) string, value func(any) string) string {
	msg, ok := messages[lang][key]
	if !ok {
		if msg, ok = messages[Languages[0]][key]; !ok {
			msg = key
		}
	}
	vals := placeholderValues(args, value)
	var b strings.Builder
	last := 0
	for _, m := range placeholder.FindAllStringIndex(msg, -1) {
		b.WriteString(text(msg[last:m[0]]))
		if v, ok := vals[msg[m[0]:m[1]]]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(text(msg[m[0]:m[1]]))
		}
		last = m[1]
	}
	b.WriteString(text(msg[last:]))
	return b.String()
}

func placeholderValues(args []any, str func(any) string) map[string]string {
	vals := make(map[string]string, len(args)/2)
	for i := 0; i+1 < len(args); i += 2 {
		vals["{"+fmt.Sprint(args[i])+"}"] = str(args[i+1])
	}
	return vals
}
