package pages

import (
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/i18n"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
)

// The English scope sentences are the ones /auth.md's table is built
// from, and every area of the scope table has words in the catalog.
func TestScopeWordsInEveryLanguage(t *testing.T) {
	for _, sc := range policy.RequestableScopes {
		if got, want := scopeWords("en", sc), policy.ScopeDescription(sc); got != want {
			t.Errorf("%s: %q in English, the scope table says %q", sc, got, want)
		}
		area, _, _ := strings.Cut(sc, ":")
		if !i18n.Has("scope."+sc) && !i18n.Has("area."+area) {
			t.Errorf("%s: no words for the area %q", sc, area)
		}
	}
	if got := scopeWords("de", "membership_plans:write"); got != "Die Daten der Schule lesen und ändern: Mitgliedschaftspläne" {
		t.Errorf("German membership_plans:write = %q", got)
	}
}

func TestRelativeTimes(t *testing.T) {
	now := time.Date(2026, 11, 25, 18, 55, 0, 0, time.UTC)
	for _, c := range []struct {
		ago        time.Duration
		lang, want string
	}{
		{0, "en", "just now"},
		{59 * time.Second, "de", "gerade eben"},
		{time.Minute, "en", "1 minute ago"},
		{5 * time.Minute, "fr", "il y a 5 minutes"},
		{time.Hour, "de", "vor 1 Stunde"},
		{23 * time.Hour, "it", "23 ore fa"},
		{24 * time.Hour, "es", "hace 1 día"},
		{3 * 24 * time.Hour, "de", "vor 3 Tagen"},
		{3 * 24 * time.Hour, "en", "3 days ago"},
		{27 * 24 * time.Hour, "pt", "há 27 dias"},
		{28 * 24 * time.Hour, "de", "28. Oktober 2026"},
		{40 * 24 * time.Hour, "es", "16 de octubre de 2026"},
		{40 * 24 * time.Hour, "en", "16 October 2026"},
		{-time.Hour, "fr", "25 novembre 2026"}, // a clock ahead: the date
	} {
		if got := relative(c.lang, now.Add(-c.ago), now); got != c.want {
			t.Errorf("%s, %v ago: %q, want %q", c.lang, c.ago, got, c.want)
		}
	}
	got := string(when("de", now.Add(-3*24*time.Hour), now))
	want := `<time datetime="2026-11-22T18:55:00Z" title="22. November 2026, 18:55 UTC">vor 3 Tagen</time>`
	if got != want {
		t.Errorf("when = %s, want %s", got, want)
	}
	if got := string(when("fr", time.Time{}, now)); got != "inconnue" {
		t.Errorf("a zero time: %q", got)
	}
}

// msgHTML escapes the message and its plain values; only el's elements
// pass as markup.
func TestMessagesEscape(t *testing.T) {
	got := string(msgHTML("en", "consent.heading", "client", el("span", "client-name", "<b>Evil</b>"), "school", "A & B"))
	want := `Allow <span id="client-name">&lt;b&gt;Evil&lt;/b&gt;</span> to access A &amp; B?`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// pageIn fetches target with the Accept-Language and checks the language
// headers and the html element name lang.
func pageIn(t *testing.T, f *fixture, target, person, accept, lang string) string {
	t.Helper()
	hdr := map[string]string{"Cookie": "session=" + person}
	if accept != "" {
		hdr["Accept-Language"] = accept
	}
	rec := f.serve("GET", target, nil, hdr)
	body := rec.Body.String()
	if got := rec.Header().Get("Content-Language"); got != lang {
		t.Errorf("%s (%q): Content-Language %q, want %q", target, accept, got, lang)
	}
	if !slices.Contains(rec.Header().Values("Vary"), "Accept-Language") {
		t.Errorf("%s: Vary %v lacks Accept-Language", target, rec.Header().Values("Vary"))
	}
	if !strings.Contains(body, `<html lang="`+lang+`">`) {
		t.Errorf("%s (%q): not an html element in %s:\n%s", target, accept, lang, body)
	}
	return html.UnescapeString(body)
}

// The consent, error and connected-applications pages are in the
// language the browser asks for, the school's when it asks for none of
// them, else English.
func TestPagesInEachLanguage(t *testing.T) {
	f := newFixture(t)
	f.grantTo(memberClient, "student", "openid", "account:read")
	f.clock.Advance(3 * 24 * time.Hour)
	_, challenge := pkce()
	consent := sitepath.Authorize + "?" + authParams(challenge).Encode()
	q := authParams(challenge)
	q.Set("redirect_uri", "https://evil.example/cb")
	refused := sitepath.Authorize + "?" + q.Encode()
	accepts := map[string]string{"en": "en-US,en;q=0.9", "de": "de-CH", "fr": "fr-FR,fr;q=0.9,en;q=0.5",
		"it": "it", "es": "es-419,es;q=0.9", "pt": "pt-BR"}
	for _, lang := range i18n.Languages {
		accept := accepts[lang]
		page := pageIn(t, f, consent, "student", accept, lang)
		for _, want := range []string{msg(lang, "consent.allow"), msg(lang, "consent.asks"),
			scopeWords(lang, "account:read"), msg(lang, "consent.title", "client", "Member App")} {
			if !strings.Contains(page, want) {
				t.Errorf("%s consent page lacks %q:\n%s", lang, want, page)
			}
		}
		page = pageIn(t, f, refused, "student", accept, lang)
		for _, want := range []string{msg(lang, "errpage.heading"), msg(lang, "error.unknown_redirect")} {
			if !strings.Contains(page, want) {
				t.Errorf("%s error page lacks %q:\n%s", lang, want, page)
			}
		}
		page = pageIn(t, f, sitepath.AccountApplications, "student", accept, lang)
		for _, want := range []string{msg(lang, "apps.heading"), msg(lang, "apps.disconnect"),
			msg(lang, "kind.vendor"), scopeWords(lang, "openid"), msg(lang, "time.days_ago", "n", "3")} {
			if !strings.Contains(page, want) {
				t.Errorf("%s applications page lacks %q:\n%s", lang, want, page)
			}
		}
		if lang != "en" {
			for _, en := range []string{"It asks to:", "Connected applications", "What it can do", "ago"} {
				if strings.Contains(page, en) {
					t.Errorf("%s applications page has the English %q", lang, en)
				}
			}
		}
	}
	// Unknown languages: the school's, then English.
	pageIn(t, f, consent, "student", "ja, zh;q=0.5", "en")
	f.pages.cfg.SchoolLanguage = func() string { return "it" }
	page := pageIn(t, f, consent, "student", "ja, zh;q=0.5", "it")
	if !strings.Contains(page, "Consenti") {
		t.Errorf("the school's language: %s", page)
	}
	pageIn(t, f, consent, "student", "", "it")
	pageIn(t, f, consent, "student", "en;q=0.2, es;q=0.7", "es")
}

// The account area's error pages and notices follow the browser too.
func TestAccountMessagesInLanguage(t *testing.T) {
	f := newFixture(t)
	page := pageIn(t, f, sitepath.AccountApplications+"/nope", "student", "de", "de")
	if !strings.Contains(page, "Diese Seite gibt es nicht.") || !strings.Contains(page, "Zurück zu Ihren verbundenen Anwendungen") {
		t.Errorf("German account error page:\n%s", page)
	}
	page = pageIn(t, f, sitepath.AccountApplications+"?"+url.Values{"done": {"already"}}.Encode(), "student", "fr", "fr")
	if !strings.Contains(page, msg("fr", "apps.notice_already")) || !strings.Contains(page, msg("fr", "apps.none", "school", issuer)) {
		t.Errorf("French notice:\n%s", page)
	}
	// The admin area's error page follows the browser as well.
	rec := f.serve("GET", sitepath.Admin+"/nope", nil, map[string]string{"Cookie": "session=owner", "Accept-Language": "de"})
	if body := rec.Body.String(); rec.Code != http.StatusNotFound || rec.Header().Get("Content-Language") != "de" ||
		!strings.Contains(body, `<html lang="de">`) || !strings.Contains(body, msg("de", "admin.error.no_page")) ||
		!strings.Contains(body, "<title>OAuth-Anwendungen · "+issuer+"</title>") {
		t.Errorf("admin error page: %d %v\n%s", rec.Code, rec.Header(), body)
	}
}
