package caddymodule

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/schooltest"
)

// The admin reads of one school's store (the audit trail, a person's
// export, the clients, the grants, the MCP connections switch) read a platform's idle school from its store without building
// it, as the doctor and the usage do: reading them lets go of no school
// in use past max_active. A school never built reads as empty and gets
// no file; one whose store cannot be opened is a 503.
func TestPlatformAdminReadsIdle(t *testing.T) {
	tp := newTestPlatform(t, 1)
	tp.put(t, "https://failed.example", nil, `,"data":`+strconv.Quote(tp.brokenData(t)))
	testPlatformAdminReadsIdle(t, tp)
	const failed = "issuer=https%3A%2F%2Ffailed.example"
	for target, h := range map[string]caddy.AdminHandlerFunc{
		"/schoolgate/audit?" + failed:                  handleAudit,
		"/schoolgate/subject?" + failed + "&subject=x": handleSubjectExport,
		"/schoolgate/clients?" + failed:                handleClients,
		"/schoolgate/grants?" + failed:                 handleGrants,
		"/schoolgate/grants?" + failed + "&subject=x":  handleGrants,
		"/schoolgate/mcp-connections?" + failed:        handleMCPConnections,
	} {
		if ans := adminDo(t, h, target, ""); ans.code != 503 || !strings.Contains(ans.body, "temporarily_unavailable") ||
			ans.header.Get("Retry-After") == "" {
			t.Errorf("%s, a store that cannot be read = %d %s", target, ans.code, ans.body)
		}
	}
}

// As TestPlatformAdminReadsIdle, with the schools in PostgreSQL.
func TestPlatformAdminReadsIdlePostgres(t *testing.T) {
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
	testPlatformAdminReadsIdle(t, tp)
}

func testPlatformAdminReadsIdle(t *testing.T, tp *testPlatform) {
	t.Helper()
	for _, s := range []string{"a", "b", "c"} {
		tp.put(t, "https://"+s+".example", nil, "")
	}
	off := tp.put(t, "https://off.example", nil, "")
	off.Disabled = true
	if _, err := tp.reg.Put(t.Context(), off); err != nil {
		t.Fatal(err)
	}
	runningAs(t, tp.app)
	const a, c = "https://a.example", "https://c.example"
	if ans := adminDo(t, handleMCPConnections, "/schoolgate/mcp-connections", `{"issuer":"`+a+`","enabled":true}`); ans.code != 200 {
		t.Fatalf("switching a's MCP connections = %d %s", ans.code, ans.body)
	}
	if ans := adminDo(t, handleClients, "/schoolgate/clients", `{"issuer":"`+a+`","client_name":"Timetable tool",`+
		`"redirect_uris":["https://tool.example/cb"],"scopes":["openid"]}`); ans.code != 201 && ans.code != 200 {
		t.Fatalf("creating a's application = %d %s", ans.code, ans.body)
	}
	act := tp.school(a).Active()
	if act == nil || !act.Acquire() {
		t.Fatal("a is not built")
	}
	mintMemberToken(t, act.Built().site.Store(), a)
	act.Release()
	tp.do(t, "https://b.example"+discoveryPath) // past max_active 1: a is let go of
	if st := tp.school(a).state(); st != "idle" {
		t.Fatalf("a is %s", st)
	}
	student := url.QueryEscape(schooltest.People["student"].Subject)
	for _, tt := range []struct {
		name   string
		h      caddy.AdminHandlerFunc
		target string
		status int
		has    []string
	}{
		{"audit", handleAudit, "/schoolgate/audit?issuer=" + url.QueryEscape(a), 200,
			[]string{`"type":"mcp_connections_switched"`, `"type":"code_redeemed"`}},
		{"audit by type", handleAudit, "/schoolgate/audit?issuer=" + url.QueryEscape(a) + "&type=code_redeemed", 200,
			[]string{`"target":"grant-1"`}},
		{"audit, bad cursor", handleAudit, "/schoolgate/audit?issuer=" + url.QueryEscape(a) + "&cursor=nope", 400,
			[]string{"cursor"}},
		{"export", handleSubjectExport, "/schoolgate/subject?issuer=" + url.QueryEscape(a) + "&subject=" + student, 200,
			[]string{`"grant-1"`}},
		{"export of nobody", handleSubjectExport, "/schoolgate/subject?issuer=" + url.QueryEscape(a) + "&subject=nobody", 404,
			[]string{"nothing is stored"}},
		{"export of an overlong sub", handleSubjectExport, "/schoolgate/subject?issuer=" + url.QueryEscape(a) + "&subject=" +
			strings.Repeat("s", 300), 404, []string{"nothing is stored"}},
		{"MCP connections", handleMCPConnections, "/schoolgate/mcp-connections?issuer=" + url.QueryEscape(a), 200,
			[]string{`{"enabled":true}`}},
		{"clients", handleClients, "/schoolgate/clients?issuer=" + url.QueryEscape(a), 200,
			[]string{`"Timetable tool"`}},
		{"connected applications", handleGrants, "/schoolgate/grants?issuer=" + url.QueryEscape(a), 200,
			[]string{`"client_id":"` + schooltest.MemberClient + `"`, `"people":1`}},
		{"a person's grants", handleGrants, "/schoolgate/grants?issuer=" + url.QueryEscape(a) + "&subject=" + student, 200,
			[]string{`"grant-1"`}},
		{"an application's grants", handleGrants, "/schoolgate/grants?issuer=" + url.QueryEscape(a) + "&client_id=" +
			schooltest.MemberClient, 200, []string{`"grant-1"`}},
		{"grants, bad cursor", handleGrants, "/schoolgate/grants?issuer=" + url.QueryEscape(a) + "&client_id=x&after=nope", 400,
			[]string{"list position"}},
		{"never built: MCP connections", handleMCPConnections, "/schoolgate/mcp-connections?issuer=" + url.QueryEscape(c), 200,
			[]string{`{"enabled":false}`}},
		{"never built: clients", handleClients, "/schoolgate/clients?issuer=" + url.QueryEscape(c), 200, []string{`[]`}},
		{"never built: grants", handleGrants, "/schoolgate/grants?issuer=" + url.QueryEscape(c), 200, []string{`"clients":[`}},
		{"disabled: audit", handleAudit, "/schoolgate/audit?issuer=" + url.QueryEscape(off.Issuer), 200, []string{`"events":[]`}},
		{"never built: audit", handleAudit, "/schoolgate/audit?issuer=" + url.QueryEscape(c), 200, []string{`"events":[]`}},
		{"never built: export", handleSubjectExport, "/schoolgate/subject?issuer=" + url.QueryEscape(c) + "&subject=" + student, 404,
			[]string{"nothing is stored"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ans := adminDo(t, tt.h, tt.target, "")
			if ans.code != tt.status {
				t.Fatalf("= %d %s, want %d", ans.code, ans.body, tt.status)
			}
			for _, want := range tt.has {
				if !strings.Contains(ans.body, want) {
					t.Errorf("= %s, want %s in it", ans.body, want)
				}
			}
		})
	}
	if st := tp.school(off.Issuer).state(); st != "disabled" || tp.school(off.Issuer).IsActive() {
		t.Errorf("reading the disabled school's store built it: %s", st)
	}
	for _, s := range []string{a, c} {
		if st := tp.school(s).state(); st != "idle" {
			t.Errorf("reading %s's store built it: %s", s, st)
		}
	}
	if !tp.school("https://b.example").IsActive() {
		t.Error("reading an idle school's store let go of the school in use")
	}
	if _, err := os.Stat(tp.dataDir(c)); !os.IsNotExist(err) {
		t.Errorf("reading a school never built made its data directory: %v", err)
	}
}
