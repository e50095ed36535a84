package caddymodule

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/registry"
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

// The doctor of a platform's idle school is read from its store without
// building it, so that reading it lets go of no school in use past
// max_active; a school never built has no steps and gets no file.
func TestPlatformDoctorIdle(t *testing.T) {
	tp := newTestPlatform(t, 1)
	tp.put(t, "https://failed.example", nil, `,"data":`+strconv.Quote(tp.brokenData(t)))
	testPlatformDoctorIdle(t, tp)
	// A store that cannot be read is the 503 of a store that failed.
	status, body := callAdmin(t, handleDoctor, httptest.NewRequest("GET",
		"/schoolgate/doctor?issuer=https%3A%2F%2Ffailed.example&client_id=x", nil))
	if status != 503 || !strings.Contains(body, "temporarily_unavailable") {
		t.Errorf("a store that cannot be read = %d %s", status, body)
	}
}

// As TestPlatformDoctorIdle, with the schools in PostgreSQL.
func TestPlatformDoctorIdlePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	pg := &PostgresStore{DSN: pgcluster.Database(t), KeySecret: "registry secret"}
	tp := newTestPlatform(t, 1, func(tp *testPlatform) {
		tp.reg = registry.NewMemory(validatePostgresRecord)
		tp.flaky.Memory = tp.reg
		tp.open = func(context.Context) (*openedRegistry, error) {
			return &openedRegistry{Registry: tp.flaky, place: placeInPostgres(pg), release: func() error { return nil }}, nil
		}
	})
	testPlatformDoctorIdle(t, tp)
}

func testPlatformDoctorIdle(t *testing.T, tp *testPlatform) {
	t.Helper()
	for _, s := range []string{"a", "b", "c"} {
		tp.put(t, "https://"+s+".example", nil, "")
	}
	runningAs(t, tp.app)
	form := url.Values{"grant_type": {"authorization_code"}, "code": {"sgac_made_up"},
		"client_id": {"doctor-test-app"}, "code_verifier": {strings.Repeat("v", 43)}}
	r := platformRequest("https://a.example" + sitepath.Token)
	r.Method, r.Body = "POST", io.NopCloser(strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	if err := tp.serve(rec, r); err != nil || rec.Code != 401 {
		t.Fatalf("the refused exchange = %d %v", rec.Code, err)
	}
	tp.do(t, "https://b.example"+discoveryPath) // past max_active 1: a is let go of, its steps stored
	if st := tp.school("https://a.example").state(); st != "idle" {
		t.Fatalf("a is %s", st)
	}
	status, body := callAdmin(t, handleDoctor, httptest.NewRequest("GET",
		"/schoolgate/doctor?issuer=https%3A%2F%2Fa.example&client_id=doctor-test-app&lang=de", nil))
	var rep authserver.DoctorReport
	if status != 200 || json.Unmarshal([]byte(body), &rep) != nil {
		t.Fatalf("the idle school's doctor = %d %s", status, body)
	}
	if rep.Stopped == nil || rep.Stopped.Name != authserver.StepToken || rep.Stopped.Count != 1 ||
		rep.Stopped.Reason != authserver.ReasonUnknownClient || rep.Stopped.Why == rep.Stopped.Reason {
		t.Errorf("the idle school's doctor lost its stored step: %s", body)
	}
	if st := tp.school("https://a.example").state(); st != "idle" {
		t.Errorf("reading its doctor built it: %s", st)
	}
	if !tp.school("https://b.example").IsActive() {
		t.Error("reading an idle school's doctor let go of the school in use")
	}
	status, body = callAdmin(t, handleDoctor, httptest.NewRequest("GET",
		"/schoolgate/doctor?issuer=https%3A%2F%2Fc.example&client_id=doctor-test-app", nil))
	if status != 200 || json.Unmarshal([]byte(body), &rep) != nil || len(rep.Steps) != 0 || rep.Known {
		t.Errorf("a school never built = %d %s", status, body)
	}
	if st := tp.school("https://c.example").state(); st != "idle" {
		t.Errorf("reading its doctor built c: %s", st)
	}
	if _, err := os.Stat(tp.dataDir("https://c.example")); !os.IsNotExist(err) {
		t.Errorf("reading a school never built made its data directory: %v", err)
	}
}
