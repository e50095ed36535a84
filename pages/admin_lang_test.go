package pages

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/i18n"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// adminFixture is a school named Demo School with MCP connections on, a
// confidential member application, a metadata-document client and a
// person connected to a vendor.
func adminFixture(t *testing.T) (*fixture, string) {
	f := newFixture(t)
	f.pages.cfg.SchoolName = func() string { return "Demo School" }
	f.enableMCP()
	app, _ := f.newApp("Planner", "confidential", "openid")
	md := &store.Client{ID: "https://agent.example/client.json", Name: "Agent", Kind: store.KindMetadata,
		Audience: store.AudienceMember, RedirectURIs: []string{"https://agent.example/cb"},
		Scopes: []string{"openid"}, AuthMethod: "none", IssuedAt: f.clock.Now()}
	if err := f.store.PutClient(context.Background(), md); err != nil {
		t.Fatal(err)
	}
	f.grantTo(memberClient, "student", "openid")
	return f, app
}

// adminPageIn is an admin page in the language the browser asks for; it
// checks what every admin page shows: the page's language, the school's
// name in the title and the header, and the breadcrumb's link to the
// overview.
func adminPageIn(t *testing.T, f *fixture, rec *httptest.ResponseRecorder, lang, title string) string {
	t.Helper()
	body := rec.Body.String()
	if got := rec.Header().Get("Content-Language"); got != lang || !strings.Contains(body, `<html lang="`+lang+`">`) {
		t.Errorf("%s page in %q, want %s:\n%s", title, got, lang, body)
	}
	page := html.UnescapeString(body)
	if want := "<title>" + title + " · Demo School</title>"; !strings.Contains(page, want) {
		t.Errorf("%s: page lacks %q:\n%s", lang, want, page)
	}
	nav := regexp.MustCompile(`(?s)<nav[^>]*>.*?</nav>`).FindString(page)
	for _, want := range []string{`<span id="school">Demo School</span>`,
		`<a href="` + sitepath.AdminApplications + `">` + msg(lang, "admin.overview") + `</a>`} {
		if !strings.Contains(nav, want) {
			t.Errorf("%s %s: the header %q lacks %q", lang, title, nav, want)
		}
	}
	if strings.Contains(nav, "Developers") {
		t.Errorf("%s %s: the header still has the Developers crumb: %q", lang, title, nav)
	}
	return page
}

// Every admin page, its notices and its error page are in the language
// the browser asks for, and name the school.
func TestAdminPagesInEachLanguage(t *testing.T) {
	f, app := adminFixture(t)
	accepts := map[string]string{"en": "", "de": "de-CH", "fr": "fr-FR,fr;q=0.9,en;q=0.5",
		"it": "it", "es": "es-419,es;q=0.9", "pt": "pt-BR"}
	md := "https://agent.example/client.json"
	served := store.UsageDelta{Minute: f.clock.Now(), LastActive: f.clock.Now()}
	served.Latency[store.LatencyBin(3*time.Millisecond)] = 1234
	if err := f.store.AddUsage(context.Background(), []store.UsageDelta{served}); err != nil {
		t.Fatal(err)
	}
	for _, lang := range i18n.Languages {
		get := func(target string) *httptest.ResponseRecorder {
			hdr := map[string]string{"Cookie": "session=owner"}
			if accepts[lang] != "" {
				hdr["Accept-Language"] = accepts[lang]
			}
			return f.serve("GET", target, nil, hdr)
		}
		pages := []struct {
			target, title string
			status        int
			want          []string
		}{
			{sitepath.AdminApplications + "?done=saved", msg(lang, "admin.overview"), 200, []string{msg(lang, "admin.usage_link"),
				msg(lang, "admin.connected_heading"), msg(lang, "admin.apps_heading"), msg(lang, "admin.metadata_heading"),
				msg(lang, "admin.loopback_heading"), msg(lang, "admin.notice.saved"), msg(lang, "admin.confidential"),
				msg(lang, "admin.not_reviewed"), msg(lang, "kind.vendor"), msg(lang, "time.just_now"),
				`id="mcp-state">` + msg(lang, "admin.on") + `<`}},
			{adminPathNew, msg(lang, "admin.new_app"), 200, []string{msg(lang, "admin.app_intro"),
				msg(lang, "admin.type_public", "method", "<code>none</code>"), scopeWords(lang, "account:read"),
				msg(lang, "admin.create")}},
			{adminPathEdit + "?client_id=" + app, msg(lang, "admin.edit_title", "name", "Planner"), 200, []string{
				msg(lang, "admin.save_changes"), msg(lang, "admin.regenerate"), msg(lang, "admin.delete_app")}},
			{adminPathDelete + "?client_id=" + app, msg(lang, "admin.delete_title", "name", "Planner"), 200, []string{
				msg(lang, "admin.delete_heading", "name", "Planner"), msg(lang, "admin.delete_revokes"),
				msg(lang, "admin.delete_button", "name", "Planner"), `<time datetime="2026-11-23T10:00:00Z"`}},
			{adminPathReview + "?client_id=" + url.QueryEscape(md), msg(lang, "admin.review_title", "name", "Agent"), 200, []string{
				msg(lang, "admin.review_check"), msg(lang, "admin.status_reviewed"), msg(lang, "admin.save")}},
			{adminPathPeople + "?client_id=" + memberClient + "&done=disconnected", msg(lang, "admin.people_title", "name", "Member App"), 200, []string{
				msg(lang, "admin.people_count", "n", `<strong id="people-count">1</strong>`), msg(lang, "admin.people_intro"),
				msg(lang, "admin.notice.disconnected"), msg(lang, "admin.disconnect"), msg(lang, "time.just_now")}},
			{adminPathActivity + "?client_id=" + memberClient, msg(lang, "admin.activity_app_title", "name", "Member App"), 200, []string{
				msg(lang, "admin.activity_intro"), msg(lang, "event.code_redeemed"), msg(lang, "actor.client"),
				msg(lang, "outcome.issued"), msg(lang, "admin.col_address"), msg(lang, "admin.see_who")}},
			{adminPathActivity + "?subject=member-1", msg(lang, "admin.activity_person_title"), 200, []string{
				msg(lang, "admin.activity_subject", "subject", `<code id="subject">member-1</code>`), msg(lang, "event.code_redeemed")}},
			{adminPathUsage, msg(lang, "admin.usage_title"), 200, []string{
				msg(lang, "admin.usage_intro"), msg(lang, "admin.usage_window.5m"), msg(lang, "admin.usage_window.24h"),
				msg(lang, "admin.usage_requests"), msg(lang, "admin.usage_status_503"), msg(lang, "cause.fair_share"),
				msg(lang, "admin.usage_p99"), msg(lang, "time.just_now"), msg(lang, "admin.all_apps")}},
		}
		for _, p := range pages {
			rec := get(p.target)
			if rec.Code != p.status {
				t.Errorf("%s %s: %d\n%s", lang, p.target, rec.Code, rec.Body)
				continue
			}
			page := adminPageIn(t, f, rec, lang, p.title)
			for _, want := range p.want {
				if !strings.Contains(page, want) {
					t.Errorf("%s %s lacks %q:\n%s", lang, p.target, want, page)
				}
			}
			if lang != "en" {
				for _, en := range []string{"Signed in as", "Delete", "Connected people", "Cancel<"} {
					if strings.Contains(page, en) {
						t.Errorf("%s %s still says %q", lang, p.target, en)
					}
				}
			}
		}

		// The page showing a new secret, answering the creating POST.
		hdr := map[string]string{}
		if accepts[lang] != "" {
			hdr["Accept-Language"] = accepts[lang]
		}
		form := appForm("Tutor "+lang, "confidential", "openid")
		form.Set("csrf_token", f.adminCSRF())
		form.Set("form_nonce", randomString())
		rec := f.adminPost(adminPathNew, "owner", form, hdr)
		page := adminPageIn(t, f, rec, lang, msg(lang, "admin.created_title"))
		if !strings.Contains(page, msg(lang, "admin.copy_once")) {
			t.Errorf("%s secret page lacks the warning:\n%s", lang, page)
		}
		// A refused form says why in the operator's language.
		form = appForm("Tutor", "confidential", "openid")
		form.Set("redirect_uris", "http://app.example/cb")
		form.Set("csrf_token", f.adminCSRF())
		form.Set("form_nonce", randomString())
		rec = f.adminPost(adminPathNew, "owner", form, hdr)
		page = html.UnescapeString(rec.Body.String())
		if want := msg(lang, "admin.invalid.redirect_https", "uri", `"http://app.example/cb"`); rec.Code != http.StatusBadRequest ||
			!strings.Contains(page, want) {
			t.Errorf("%s refused form: %d, want %q:\n%s", lang, rec.Code, want, page)
		}

		// The admin area's error page.
		rec = get(sitepath.Admin + "/nope")
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s: error page %d", lang, rec.Code)
		}
		page = html.UnescapeString(rec.Body.String())
		for _, want := range []string{`<html lang="` + lang + `">`, msg(lang, "admin.error.no_page"), msg(lang, "admin.back"),
			"<title>" + msg(lang, "admin.overview") + " · Demo School</title>"} {
			if !strings.Contains(page, want) {
				t.Errorf("%s error page lacks %q:\n%s", lang, want, page)
			}
		}
	}
}

// The school's language is the admin area's when the browser asks for
// none of the pages' languages.
func TestAdminPagesInSchoolLanguage(t *testing.T) {
	f, _ := adminFixture(t)
	f.pages.cfg.SchoolLanguage = func() string { return "it" }
	rec := f.serve("GET", sitepath.AdminApplications, nil, map[string]string{"Cookie": "session=owner", "Accept-Language": "ja"})
	adminPageIn(t, f, rec, "it", msg("it", "admin.overview"))
	rec = f.serve("GET", sitepath.AdminApplications, nil, map[string]string{"Cookie": "session=owner"})
	adminPageIn(t, f, rec, "it", msg("it", "admin.overview"))
}

// The overview's lists are paged each on its own, the connected
// applications and the metadata-document clients most used first (then
// by name), and a page that is not one of a list's is refused with 400.
func TestAdminOverviewPaged(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	f.pages.adminPageSize = 2
	ctx := context.Background()
	for _, c := range []struct{ id, name string }{
		{"https://zed.example/c.json", "Zed"}, {"https://beta.example/c.json", "Beta"}, {"https://alpha.example/c.json", "Alpha"},
	} {
		md := &store.Client{ID: c.id, Name: c.name, Kind: store.KindMetadata, Audience: store.AudienceMember,
			RedirectURIs: []string{"https://app.example/cb"}, Scopes: []string{"openid"}, AuthMethod: "none",
			IssuedAt: f.clock.Now()}
		if err := f.store.PutClient(ctx, md); err != nil {
			t.Fatal(err)
		}
	}
	// Member App: two people; Portal: one person on two devices; Ops CLI
	// and the vendors' order by name decide the rest.
	f.grantTo(memberClient, "student", "openid")
	f.grantTo(memberClient, "student2", "openid")
	f.grantTo(confidential, "student", "openid")
	f.grantTo(confidential, "student", "openid")
	f.grantTo("https://zed.example/c.json", "student", "openid")

	rows := func(page, table, attr string) []string {
		t.Helper()
		tbl := regexp.MustCompile(`(?s)<table id="` + table + `">.*?</table>`).FindString(page)
		var out []string
		for _, m := range regexp.MustCompile(attr+`="([^"]+)"`).FindAllStringSubmatch(tbl, -1) {
			out = append(out, m[1])
		}
		return out
	}
	check := func(query string, connected, metadata []string) string {
		t.Helper()
		rec := f.adminGet(sitepath.AdminApplications+query, "owner")
		page := html.UnescapeString(rec.Body.String())
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d\n%s", query, rec.Code, page)
		}
		if got := rows(page, "connected", "data-client-id"); strings.Join(got, " ") != strings.Join(connected, " ") {
			t.Errorf("%s: connected %v, want %v", query, got, connected)
		}
		if got := rows(page, "metadata", "data-client-id"); strings.Join(got, " ") != strings.Join(metadata, " ") {
			t.Errorf("%s: metadata %v, want %v", query, got, metadata)
		}
		return page
	}
	page := check("", []string{memberClient, confidential}, []string{"https://zed.example/c.json", "https://alpha.example/c.json"})
	for _, want := range []string{`id="connected-next"`, `href="` + sitepath.AdminApplications + `?connected_page=2#connected-heading"`,
		`href="` + sitepath.AdminApplications + `?metadata_page=2#metadata-heading"`, msg("en", "admin.page_of", "page", 1, "pages", 2)} {
		if !strings.Contains(page, want) {
			t.Errorf("first page lacks %q:\n%s", want, page)
		}
	}
	// Portal counts one person for its two grants.
	if !strings.Contains(page, `<tr data-client-id="`+confidential+`"><td>Portal</td><td>`+msg("en", "kind.vendor")+
		`</td><td data-label="Connected people" class="count">1</td>`) {
		t.Errorf("Portal does not count one person:\n%s", page)
	}
	// The second page of one list keeps the other where it was.
	page = check("?connected_page=2&metadata_page=2", []string{"https://zed.example/c.json", operatorClient},
		[]string{"https://beta.example/c.json"})
	for _, want := range []string{`href="` + sitepath.AdminApplications + `?metadata_page=2#connected-heading"`,
		`href="` + sitepath.AdminApplications + `?connected_page=2#metadata-heading"`, `id="metadata-prev"`} {
		if !strings.Contains(page, want) {
			t.Errorf("second pages lack %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, `id="connected-next"`) {
		t.Error("the last page links to a next one")
	}

	// A page past the end (a link from before rows went away) is the last.
	for _, stale := range []string{"connected_page=3", "connected_page=" + strings.Repeat("9", 15)} {
		rec := f.serve("GET", sitepath.AdminApplications+"?"+stale, nil, map[string]string{"Cookie": "session=owner"})
		body := html.UnescapeString(rec.Body.String())
		if rec.Code != http.StatusOK || !strings.Contains(body, msg("en", "admin.page_of", "page", 2, "pages", 2)) ||
			!strings.Contains(body, `id="connected-prev"`) {
			t.Errorf("%s: %d, want the last page\n%s", stale, rec.Code, body)
		}
	}
	for _, bad := range []string{"connected_page=0", "connected_page=-1", "connected_page=x",
		"metadata_page=2.0", "loopback_page=" + strings.Repeat("9", 40)} {
		rec := f.serve("GET", sitepath.AdminApplications+"?"+bad, nil,
			map[string]string{"Cookie": "session=owner", "Accept-Language": "de"})
		body := html.UnescapeString(rec.Body.String())
		if rec.Code != http.StatusBadRequest || !strings.Contains(body, `<p id="error" role="alert">Diese Liste hat keine Seite "`) {
			t.Errorf("%s: %d\n%s", bad, rec.Code, body)
		}
	}
}
