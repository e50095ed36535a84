package pages

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/sitepath"
)

var (
	reEventRow  = regexp.MustCompile(`(?s)<tr class="event">.*?</tr>`)
	reEventWhat = regexp.MustCompile(`<td class="what"><strong>([^<]*)</strong>`)
	reNextPage  = regexp.MustCompile(`<a href="([^"]+)" id="next-page"`)
)

// activityRows are the event rows of an activity page, each as its words
// and the row's HTML.
func activityRows(page string) (what []string, rows []string) {
	for _, row := range reEventRow.FindAllString(page, -1) {
		m := reEventWhat.FindStringSubmatch(row)
		if m == nil {
			continue
		}
		what = append(what, m[1])
		rows = append(rows, row)
	}
	return what, rows
}

// The operator sees, per application and per person, what was done,
// newest first and in words: a person's authorization, the application's
// sign-in and renewal from its address, an operator's disconnect naming
// the operator. The overview's rows and the people page link to it.
func TestAdminActivity(t *testing.T) {
	f := newFixture(t)
	toks := f.tokens() // consent, code issued and redeemed, by member-1
	f.clock.Advance(time.Hour)
	if status, m := f.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {toks["refresh_token"].(string)},
		"client_id": {memberClient}}); status != http.StatusOK {
		t.Fatalf("refresh: %d %v", status, m)
	}

	overview := htmlUnescape(f.adminGet(sitepath.AdminApplications, "owner").Body.String())
	if !strings.Contains(overview, `<a href="`+adminPathActivity+`?client_id=`+memberClient+`" class="activity-link">Activity`) {
		t.Errorf("the overview's row does not link to the application's activity:\n%s", overview)
	}
	people := htmlUnescape(f.adminGet(adminPathPeople+"?client_id="+memberClient, "owner").Body.String())
	if !strings.Contains(people, `<a href="`+adminPathActivity+`?subject=member-1" class="activity-link">Activity`) {
		t.Errorf("the people page does not link to the person's activity:\n%s", people)
	}

	rec := f.adminGet(adminPathActivity+"?client_id="+memberClient, "owner")
	page := htmlUnescape(rec.Body.String())
	if rec.Code != http.StatusOK {
		t.Fatalf("activity: %d\n%s", rec.Code, page)
	}
	checkPageHeaders(t, rec)
	what, rows := activityRows(page)
	want := []string{msg("en", "event.token_refreshed"), msg("en", "event.code_redeemed"), msg("en", "event.code_issued"),
		msg("en", "event.consent_granted")}
	if strings.Join(what, "|") != strings.Join(want, "|") {
		t.Fatalf("events %q, want %q newest first", what, want)
	}
	for _, s := range []string{"<title>Activity of Member App · ", `class="when"><time datetime="2026-11-23T11:00:00Z"`,
		`class="actor">The application<`, `class="outcome">Tokens issued<`, `class="address"><code>192.0.2.1</code>`,
		`<a href="` + adminPathActivity + `?subject=member-1"><code>member-1</code></a>`} {
		if !strings.Contains(rows[0], s) && !strings.Contains(page, s) {
			t.Errorf("the activity page lacks %q:\n%s", s, page)
		}
	}
	if !strings.Contains(rows[3], `class="actor">The person<`) {
		t.Errorf("the consent is not the person's: %s", rows[3])
	}
	for _, secret := range []string{toks["access_token"].(string), toks["refresh_token"].(string)} {
		if strings.Contains(page, secret) {
			t.Error("the activity page shows a token")
		}
	}

	// An operator disconnects the person: their activity says who did.
	f.clock.Advance(time.Hour)
	form := url.Values{"client_id": {memberClient}, "subject": {"member-1"}, "csrf_token": {f.adminCSRF()}}
	if rec := f.adminPost(adminPathDisconnect, "owner", form, nil); rec.Code != http.StatusSeeOther {
		t.Fatalf("disconnect: %d", rec.Code)
	}
	page = htmlUnescape(f.adminGet(adminPathActivity+"?subject=member-1", "owner").Body.String())
	what, rows = activityRows(page)
	if len(what) != 5 || what[0] != msg("en", "event.app_disconnected") {
		t.Fatalf("the person's events %q, want the disconnect first", what)
	}
	for _, s := range []string{`class="actor">An operator <code>operator-1</code>`, "· 1 authorization ended<",
		`<a href="` + adminPathActivity + `?client_id=` + memberClient + `"><code>` + memberClient + `</code></a>`} {
		if !strings.Contains(rows[0], s) {
			t.Errorf("the disconnect lacks %q: %s", s, rows[0])
		}
	}
	if !strings.Contains(page, `<code id="subject">member-1</code>`) || strings.Contains(page, `class="subject"`) {
		t.Errorf("a person's view names them once, not on every row:\n%s", page)
	}
	// Both: the person with this application; another application's are not shown.
	page = htmlUnescape(f.adminGet(adminPathActivity+"?client_id=portal&subject=member-1", "owner").Body.String())
	if what, _ := activityRows(page); len(what) != 0 || !strings.Contains(page, `id="no-events">`+msg("en", "admin.activity_none")) {
		t.Errorf("the person with another application: %q\n%s", what, page)
	}
}

// The view is paged by the store's cursor: following the links shows
// every event once, newest first, and ends with no further link.
func TestAdminActivityPaging(t *testing.T) {
	f := newFixture(t)
	defer func(n int) { activityPageSize = n }(activityPageSize)
	activityPageSize = 2
	rt := f.tokens()["refresh_token"].(string)
	for range 4 {
		f.clock.Advance(time.Minute)
		status, m := f.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {memberClient}})
		if status != http.StatusOK {
			t.Fatalf("refresh: %d %v", status, m)
		}
		rt = m["refresh_token"].(string)
	}
	// consent, code issued, code redeemed, 4 refreshes: 7 events, 4 pages.
	target := adminPathActivity + "?client_id=" + memberClient
	var times []string
	for pages := 0; target != ""; pages++ {
		if pages > 4 {
			t.Fatal("the pages do not end")
		}
		rec := f.adminGet(target, "owner")
		page := htmlUnescape(rec.Body.String())
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d\n%s", target, rec.Code, page)
		}
		_, rows := activityRows(page)
		if len(rows) > 2 {
			t.Fatalf("a page of %d events, want at most 2", len(rows))
		}
		for _, r := range rows {
			times = append(times, regexp.MustCompile(`datetime="([^"]+)"`).FindStringSubmatch(r)[1])
		}
		if pages > 0 && !strings.Contains(page, `id="first-page"`) {
			t.Errorf("page %d has no link to the first", pages+1)
		}
		target = ""
		if m := reNextPage.FindStringSubmatch(page); m != nil {
			target = m[1]
		}
	}
	if len(times) != 7 {
		t.Fatalf("%d events over the pages, want 7: %v", len(times), times)
	}
	for i := 1; i < len(times); i++ {
		if times[i] > times[i-1] {
			t.Errorf("not newest first: %v", times)
		}
	}
	if times[0] != "2026-11-23T10:04:00Z" {
		t.Errorf("the first is %s, want the last refresh", times[0])
	}
}

// Bad links are a 400 page, an application of which nothing is known a
// 404; only a signed-in operator sees any of it.
func TestAdminActivityRefused(t *testing.T) {
	f := newFixture(t)
	f.tokens()
	long := strings.Repeat("x", 3000)
	for _, tc := range []struct {
		name, query, person string
		status              int
	}{
		{"nothing named", "", "owner", http.StatusBadRequest},
		{"empty values", "client_id=&subject=", "owner", http.StatusBadRequest},
		{"a client_id too long", "client_id=" + long, "owner", http.StatusBadRequest},
		{"a subject too long", "subject=" + long, "owner", http.StatusBadRequest},
		{"a forged cursor", "client_id=" + memberClient + "&after=forged", "owner", http.StatusBadRequest},
		{"an unknown application", "client_id=nope", "owner", http.StatusNotFound},
		{"a member", "client_id=" + memberClient, "student", http.StatusForbidden},
		{"nobody signed in", "client_id=" + memberClient, "", http.StatusSeeOther},
		{"a person of whom nothing is recorded", "subject=member-9", "owner", http.StatusOK},
	} {
		rec := f.adminGet(adminPathActivity+"?"+tc.query, tc.person)
		if rec.Code != tc.status {
			t.Errorf("%s: %d, want %d\n%s", tc.name, rec.Code, tc.status, rec.Body)
			continue
		}
		if tc.status == http.StatusBadRequest && !strings.Contains(htmlUnescape(rec.Body.String()), msg("en", "admin.error.bad_activity_link")) {
			t.Errorf("%s: the page does not say why:\n%s", tc.name, rec.Body)
		}
	}
	rec := f.adminPost(adminPathActivity+"?client_id="+memberClient, "owner", url.Values{"csrf_token": {f.adminCSRF()}}, nil)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", rec.Code)
	}
}
