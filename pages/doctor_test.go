package pages

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/sitepath"
)

// The admin area's connection doctor names the step an application
// stopped at and why, in the operator's language; the overview's rows
// link to it. The member sees the attempt that stopped for them, in
// words only; another member does not.
func TestDoctorPages(t *testing.T) {
	f := newFixture(t)
	v, c := pkce()
	code := f.code(authParams(c), v) // member-1 approves; code issued
	other, _ := pkce()
	if status, _ := f.exchange(code, other); status != http.StatusBadRequest {
		t.Fatalf("exchange with another attempt's verifier: %d", status)
	}
	f.clock.Advance(5 * time.Minute)

	overview := htmlUnescape(f.adminGet(sitepath.AdminApplications, "owner").Body.String())
	if !strings.Contains(overview, `<a href="`+adminPathDoctor+`?client_id=`+memberClient+`" class="doctor-link">Connection doctor`) {
		t.Errorf("the overview's row does not link to the doctor:\n%s", overview)
	}
	for lang, want := range map[string][]string{
		"en": {"Its latest attempt stopped at <strong>code exchanged for tokens</strong> <time", "5 minutes ago</time>: the PKCE verifier does not match (it is from another attempt). The application was sent <code>invalid_grant</code>.", "<td data-label=\"Times\" class=\"count\">1</td>"},
		"de": {"beim Schritt <strong>Code gegen Tokens getauscht</strong> stehen: der PKCE-Verifier passt nicht", "Erfolgreich"},
	} {
		rec := f.serve("GET", adminPathDoctor+"?client_id="+memberClient, nil,
			map[string]string{"Cookie": "session=owner", "Accept-Language": lang})
		page := htmlUnescape(rec.Body.String())
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d\n%s", lang, rec.Code, page)
		}
		for _, w := range want {
			if !strings.Contains(page, w) {
				t.Errorf("%s: the doctor lacks %q:\n%s", lang, w, page)
			}
		}
		if strings.Contains(page, other) || strings.Contains(page, code) || strings.Contains(page, v) {
			t.Errorf("%s: the doctor shows a secret of the attempt", lang)
		}
	}
	if rec := f.adminGet(adminPathDoctor, "owner"); rec.Code != http.StatusBadRequest {
		t.Errorf("no client_id: %d", rec.Code)
	}
	if rec := f.adminGet(adminPathDoctor+"?client_id="+memberClient, "student"); rec.Code == http.StatusOK {
		t.Errorf("a member reads the doctor: %d", rec.Code)
	}

	mine := htmlUnescape(f.serve("GET", sitepath.AccountApplications, nil, map[string]string{"Cookie": "session=student"}).Body.String())
	if !strings.Contains(mine, `id="stopped"`) ||
		!strings.Contains(mine, "5 minutes ago</time>; it stopped because the PKCE verifier does not match") {
		t.Errorf("the member's page lacks their stopped attempt:\n%s", mine)
	}
	if strings.Contains(mine, "invalid_grant") {
		t.Errorf("the member's page shows the error code")
	}
	theirs := htmlUnescape(f.serve("GET", sitepath.AccountApplications, nil, map[string]string{"Cookie": "session=student2"}).Body.String())
	if strings.Contains(theirs, `id="stopped"`) {
		t.Errorf("another member sees the attempt:\n%s", theirs)
	}
	f.clock.Advance(25 * time.Hour)
	later := htmlUnescape(f.serve("GET", sitepath.AccountApplications, nil, map[string]string{"Cookie": "session=student"}).Body.String())
	if strings.Contains(later, `id="stopped"`) {
		t.Errorf("an attempt older than a day is still shown")
	}
}
