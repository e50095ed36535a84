package i18n

import (
	"slices"
	"strings"
	"testing"
)

// Every language has every English message, nothing else, and the same
// placeholders in each.
func TestMessagesComplete(t *testing.T) {
	en := messages[Languages[0]]
	for _, lang := range Languages[1:] {
		m := messages[lang]
		for key, text := range en {
			tr, ok := m[key]
			if !ok {
				t.Errorf("%s: %q is missing", lang, key)
				continue
			}
			if got, want := placeholdersOf(tr), placeholdersOf(text); !slices.Equal(got, want) {
				t.Errorf("%s: %q has the placeholders %v, English %v", lang, key, got, want)
			}
			if strings.TrimSpace(tr) == "" {
				t.Errorf("%s: %q is empty", lang, key)
			}
		}
		for key := range m {
			if _, ok := en[key]; !ok {
				t.Errorf("%s: %q is not an English message", lang, key)
			}
		}
	}
}

func placeholdersOf(text string) []string {
	p := placeholder.FindAllString(text, -1)
	slices.Sort(p)
	return slices.Compact(p)
}

func TestChooseLanguage(t *testing.T) {
	for _, c := range []struct{ accept, school, want string }{
		{"", "", "en"},
		{"", "de", "de"},
		{"de", "", "de"},
		{"de-CH", "fr", "de"},
		{"fr-CA,fr;q=0.9", "", "fr"},
		{"pt-BR", "", "pt"},
		{"es-419", "", "es"},
		{"it-IT,it;q=0.9,en;q=0.8", "", "it"},
		{"ja", "fr", "fr"},           // unknown: the school's
		{"ja", "", "en"},             // then English
		{"ja", "xx", "en"},           // a school language the pages lack
		{"ja;q=0.9, zh", "it", "it"}, // nothing known at any weight
		{"en;q=0.3, de;q=0.8", "", "de"},
		{"de;q=0.2, es;q=0.5, fr;q=0.4", "", "es"},
		{"de, en;q=0.5", "fr", "de"},
		{"de;q=0, fr;q=0.1", "it", "fr"}, // q=0: not acceptable
		{"de;q=0", "it", "it"},
		{"gsw", "", "de"}, // Swiss German reads German
		{"*", "fr", "fr"},
		{"!!!not a header", "it", "it"},
		{strings.Repeat("x-", 400), "es", "es"},
	} {
		if got := Choose(c.accept, c.school); got != c.want {
			t.Errorf("Choose(%q, %q) = %q, want %q", c.accept, c.school, got, c.want)
		}
	}
}
