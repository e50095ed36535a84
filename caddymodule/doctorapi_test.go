package caddymodule

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/sitepath"
)

// GET /schoolgate/doctor names the step an application stopped at and
// why, in the language asked for; every parameter it would not use is a
// 400 naming it.
func TestDoctorRoute(t *testing.T) {
	if _, err := caddy.GetModule("admin.api.schoolgate_doctor"); err != nil {
		t.Fatalf("the route is not registered with Caddy's admin API: %v", err)
	}
	ts := newTestSite(t, nil)
	runningAs(t, &App{sites: map[string]*site{ts.g.Issuer: ts.site}})
	form := url.Values{"grant_type": {"authorization_code"}, "code": {"sgac_made_up"},
		"client_id": {"doctor-test-app"}, "code_verifier": {strings.Repeat("v", 43)}}
	r := httptest.NewRequest("POST", sitepath.Token, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if err := ts.site.Serve(httptest.NewRecorder(), r, ts.upstream); err != nil {
		t.Fatal(err)
	}
	const school = "issuer=https%3A%2F%2Fschool.example"
	for _, lang := range []string{"", "de"} {
		q := school + "&client_id=doctor-test-app"
		if lang != "" {
			q += "&lang=" + lang
		}
		status, body := callAdmin(t, handleDoctor, httptest.NewRequest("GET", "/schoolgate/doctor?"+q, nil))
		var rep authserver.DoctorReport
		if status != 200 || json.Unmarshal([]byte(body), &rep) != nil {
			t.Fatalf("= %d %s", status, body)
		}
		if rep.Stopped == nil || rep.Stopped.Name != authserver.StepToken ||
			rep.Stopped.Reason != authserver.ReasonUnknownClient || rep.Stopped.Error != "invalid_client" ||
			rep.Stopped.Why == "" || rep.Stopped.Why == rep.Stopped.Reason || rep.Known {
			t.Errorf("lang %q: %s", lang, body)
		}
	}
	for _, tt := range []struct {
		name, query string
		status      int
		has         string
	}{
		{"no school", "client_id=x", 400, "issuer"},
		{"no client", school, 400, "client_id"},
		{"unknown parameter", school + "&client_id=x&subject=y", 400, `unknown parameter "subject"`},
		{"twice", school + "&client_id=x&client_id=y", 400, "give it once"},
		{"unknown language", school + "&client_id=x&lang=xx", 400, "lang"},
		{"unknown school", "issuer=https%3A%2F%2Fother.example&client_id=x", 404, "no school"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, body := callAdmin(t, handleDoctor, httptest.NewRequest("GET", "/schoolgate/doctor?"+tt.query, nil))
			if status != tt.status || !strings.Contains(body, tt.has) {
				t.Errorf("= %d %s, want %d with %s", status, body, tt.status, tt.has)
			}
		})
	}
	if status, _ := callAdmin(t, handleDoctor, httptest.NewRequest("POST", "/schoolgate/doctor?"+school, nil)); status != 405 {
		t.Errorf("POST = %d", status)
	}
}
