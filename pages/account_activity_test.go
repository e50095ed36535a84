package pages

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// Each application on the person's page says when and from where it was
// last used, and lists its latest events for them in words, newest
// first; another person's and another application's are not there.
func TestAccountActivity(t *testing.T) {
	f := newFixture(t)
	toks := f.tokens()
	f.clock.Advance(3 * time.Hour)
	if status, m := f.token(refreshForm(toks["refresh_token"].(string))); status != http.StatusOK {
		t.Fatalf("refresh: %d %v", status, m)
	}
	f.grantTo(memberClient, "student2", "openid") // another person's, stamped later
	f.clock.Advance(time.Minute)

	_, rows := f.accountPage("student", "")
	row := rows[memberClient]
	for _, want := range []string{
		`<span class="used-from">from <code>192.0.2.1</code></span>`,
		`<details class="activity"><summary>Recent activity</summary>`,
		`<li class="event">Access renewed, <time datetime="2026-11-23T13:00:00Z" title="23 November 2026, 13:00 UTC">1 minute ago</time> <span class="muted">from <code>192.0.2.1</code></span></li>` +
			`<li class="event">Application signed in, <time datetime="2026-11-23T10:00:00Z"`,
	} {
		if !strings.Contains(row, want) {
			t.Errorf("the row lacks %q:\n%s", want, row)
		}
	}
	if n := strings.Count(row, `<li class="event">`); n != accountActivityShown {
		t.Errorf("%d events listed, want the latest %d", n, accountActivityShown)
	}
	if len(rows) != 1 {
		t.Errorf("rows %v", rows)
	}

	// In German, in words.
	rec := f.serve("GET", "/oauth/account/applications", nil, map[string]string{"Cookie": "session=student", "Accept-Language": "de"})
	if page := htmlUnescape(rec.Body.String()); !strings.Contains(page, "Zugriff verlängert, <time") ||
		!strings.Contains(page, "von <code>192.0.2.1</code>") || !strings.Contains(page, "Letzte Aktivität") {
		t.Errorf("German activity:\n%s", page)
	}
}

// When the audit trail cannot be read, the page still lists the
// applications, without their activity.
func TestAccountActivityUnavailable(t *testing.T) {
	f, fs := failingFixture(t)
	f.tokens()
	fs.Fail("QueryAudit")
	_, rows := f.accountPage("student", "")
	row, ok := rows[memberClient]
	if !ok || strings.Contains(row, "activity") || strings.Contains(row, "used-from") {
		t.Errorf("rows %v", rows)
	}
}
