package caddymodule

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/authserver"
)

// The audit route answers a page of events and refuses, with a 400 that
// names it, every parameter it would not use as asked.
func TestAuditRoute(t *testing.T) {
	if _, err := caddy.GetModule("admin.api.schoolgate_audit"); err != nil {
		t.Fatalf("the routes are not registered with Caddy's admin API: %v", err)
	}
	ts := newTestSite(t, nil)
	runningAs(t, &App{sites: map[string]*site{ts.g.Issuer: ts.site}})
	const school = "issuer=https%3A%2F%2Fschool.example"
	for _, tt := range []struct {
		name, query string
		status      int
		has         string
	}{
		{"all", school, 200, `"type":"code_redeemed"`},
		{"by type and time", school + "&type=code_redeemed&since=1h&limit=5", 200, `"target":"grant-1"`},
		{"by client", school + "&client_id=member-app", 200, `"client_id":"member-app"`},
		{"nobody's", school + "&subject=member-9", 200, `"events":[]`},
		{"an RFC 3339 window", school + "&since=2020-01-01T00:00:00Z&until=2099-01-01T00:00:00Z", 200, `"code_redeemed"`},
		{"unknown parameter", school + "&sub=member-1", 400, `unknown parameter "sub"`},
		{"twice", school + "&type=code_redeemed&type=code_replay", 400, "give it once"},
		{"unknown type", school + "&type=login", 400, `type "login" is not an event type`},
		{"bad since", school + "&since=yesterday", 400, "since must be an RFC 3339 time"},
		{"negative duration", school + "&since=-1h", 400, "since"},
		{"since after until", school + "&since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", 400, "before until"},
		{"bad limit", school + "&limit=0", 400, "limit"},
		{"too large a limit", school + "&limit=1001", 400, "limit"},
		{"bad cursor", school + "&cursor=nope", 400, "cursor"},
		{"no school", "type=code_redeemed", 400, "issuer"},
		{"unknown school", "issuer=https%3A%2F%2Fother.example", 404, "no school"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, body := callAdmin(t, handleAudit, httptest.NewRequest("GET", "/schoolgate/audit?"+tt.query, nil))
			if status != tt.status || !strings.Contains(body, tt.has) {
				t.Errorf("= %d %s, want %d with %s", status, body, tt.status, tt.has)
			}
		})
	}
	if status, _ := callAdmin(t, handleAudit, httptest.NewRequest("POST", "/schoolgate/audit?"+school, nil)); status != 405 {
		t.Errorf("POST /schoolgate/audit = %d", status)
	}
}

// A person's export and erasure: 404 for a person of whom nothing is
// stored, their tokens refused once erased, erasing again a 404, and the
// erasure's event naming the admin API, not the person.
func TestSubjectRoutes(t *testing.T) {
	ts := newTestSite(t, nil)
	runningAs(t, &App{sites: map[string]*site{ts.g.Issuer: ts.site}})
	export := func(subject string) (int, string) {
		return callAdmin(t, handleSubjectExport, httptest.NewRequest("GET",
			"/schoolgate/subject?issuer=https%3A%2F%2Fschool.example&subject="+subject, nil))
	}
	erase := func(body string) (int, string) {
		return callAdmin(t, audited(handleSubjectErase), httptest.NewRequest("POST", "/schoolgate/subject/erase",
			strings.NewReader(body)))
	}
	if status, body := export("member-9"); status != 404 || !strings.Contains(body, "nothing is stored") {
		t.Errorf("export of an unknown person = %d %s", status, body)
	}
	if status, body := export(""); status != 400 {
		t.Errorf("export of no one = %d %s", status, body)
	}
	if status, body := export("member-1"); status != 200 || !strings.Contains(body, `"id":"grant-1"`) ||
		!strings.Contains(body, `"sub":"member-1"`) || !strings.Contains(body, `"tokens":1`) {
		t.Errorf("export = %d %s", status, body)
	}
	for _, tt := range []struct{ body, has string }{
		{`{"issuer":"https://school.example"}`, "subject"},
		{`{"subject":"member-1"}`, "issuer"},
		{`member-1`, "JSON"},
	} {
		if status, body := erase(tt.body); status != 400 || !strings.Contains(body, tt.has) {
			t.Errorf("erase %s = %d %s, want 400 with %s", tt.body, status, body, tt.has)
		}
	}
	if _, err := ts.as.LookupAccessToken(context.Background(), ts.token); err != nil {
		t.Fatalf("a refused erasure ended a token: %v", err)
	}
	if status, body := erase(`{"issuer":"https://school.example","subject":"member-9"}`); status != 404 {
		t.Errorf("erase of an unknown person = %d %s", status, body)
	}
	status, body := erase(`{"issuer":"https://school.example","subject":"member-1"}`)
	if status != 200 || !strings.Contains(body, `"grants":1`) || !strings.Contains(body, `"tokens":1`) {
		t.Fatalf("erase = %d %s", status, body)
	}
	if _, err := ts.as.LookupAccessToken(context.Background(), ts.token); !errors.Is(err, authserver.ErrInvalidToken) {
		t.Errorf("the erased person's token: %v", err)
	}
	if status, _ := export("member-1"); status != 404 {
		t.Errorf("export after the erasure = %d", status)
	}
	if status, _ := erase(`{"issuer":"https://school.example","subject":"member-1"}`); status != 404 {
		t.Errorf("erase again = %d, want 404", status)
	}
	_, body = callAdmin(t, handleAudit, httptest.NewRequest("GET",
		"/schoolgate/audit?issuer=https%3A%2F%2Fschool.example", nil))
	if strings.Contains(body, "member-1") || !strings.Contains(body, `"type":"subject_erased"`) ||
		!strings.Contains(body, `"actor":"admin_api"`) || !strings.Contains(body, `"client_ip":"192.0.2.1"`) {
		t.Errorf("the audit after the erasure: %s", body)
	}
}
