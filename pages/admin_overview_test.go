package pages

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// The overview renders the rows straight from ClientInfo: type, creation
// time and, for metadata clients, what they may request now.
func TestOverviewRowsFromClientInfo(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	app, err := f.srv.CreateApp(context.Background(), authserver.AppSpec{Name: "Billing", RedirectURIs: []string{appRedirect},
		Scopes: []string{"account:read"}, Confidential: true}, "")
	if err != nil {
		t.Fatal(err)
	}
	md := &store.Client{ID: "https://agent.example/client.json", Name: "Agent", Kind: store.KindMetadata,
		Audience: store.AudienceMember, RedirectURIs: []string{"http://127.0.0.1/cb"},
		Scopes: []string{"openid", "account:write"}, AuthMethod: "none", IssuedAt: f.clock.Now()}
	if err := f.store.PutClient(context.Background(), md); err != nil {
		t.Fatal(err)
	}
	page := f.adminGet(sitepath.AdminApplications, "owner").Body.String()
	if !regexp.MustCompile(regexp.QuoteMeta("<code>"+app.ClientID+"</code></td>") + `<td[^>]*>confidential</td>`).MatchString(page) {
		t.Errorf("overview lacks %s as confidential", app.ClientID)
	}
	for _, want := range []string{`<time datetime="` + app.IssuedAt.UTC().Format(time.RFC3339) + `"`, "not reviewed",
		`<ul class="plain scopes"><li><code>openid</code></li></ul>`} {
		if !strings.Contains(page, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
}
