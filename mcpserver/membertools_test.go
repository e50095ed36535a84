package mcpserver

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/policy"
)

func TestMemberToolsNeedSignIn(t *testing.T) {
	h := newHarness(t)
	args := map[string]map[string]any{toolMyEnrollments: {}, toolAccountQuery: {"query": "{ viewer { id } }"}}
	for _, tool := range []string{toolMyEnrollments, toolAccountQuery} {
		tr := h.callTool("", tool, args[tool])
		if !tr.IsError {
			t.Fatalf("%s answered an anonymous call: %s", tool, tr.text())
		}
		for _, want := range []string{"sign", testMetadata, "account:read", testOrigin} {
			if !strings.Contains(strings.ToLower(tr.text()), strings.ToLower(want)) {
				t.Errorf("%s: anonymous error %q does not mention %q", tool, tr.text(), want)
			}
		}
	}
	if n := h.account.count(); n != 0 {
		t.Fatalf("the Account API was called %d times for callers without access", n)
	}
}

func TestMyEnrollments(t *testing.T) {
	h := newHarness(t)
	var out struct {
		Viewer struct {
			ID    string `json:"id"`
			Email string `json:"email"`
		} `json:"viewer"`
		Count       int              `json:"count"`
		Enrollments []map[string]any `json:"enrollments"`
	}
	h.okTool("member", toolMyEnrollments, map[string]any{}, &out)

	call := h.account.last(t)
	if call.id == nil || call.id.Subject != "m-1" || call.id.Email != "mia@example.com" || call.id.ClientID != "app" {
		t.Fatalf("the Account API must get the member's identity, got %+v", call.id)
	}
	if call.query != enrollmentsQuery || call.variables["first"] != defaultEnrollments {
		t.Fatalf("query %q variables %v", call.query, call.variables)
	}
	if out.Viewer.ID != "m-1" || out.Count != 2 {
		t.Fatalf("result %+v", out)
	}
	e := out.Enrollments[0]
	if e["slug"] != "portrait-photography" || e["expireDate"] != "2027-06-30" || e["title"] != "Portrait Photography" ||
		e["url"] != testOrigin+"/courses/portrait-photography" {
		t.Fatalf("enrollment %v", e)
	}
	if lw, _ := e["lastWatchedLecture"].(map[string]any); lw["positionSeconds"] != 312.0 {
		t.Fatalf("progress lost: %v", e)
	}
	if _, ok := out.Enrollments[1]["title"]; ok {
		t.Fatal("a course missing from the catalog must not get a title")
	}

	h.okTool("member", toolMyEnrollments, map[string]any{"first": 100}, nil)
	if got := h.account.last(t).variables["first"]; got != 100 {
		t.Fatalf("first = %v", got)
	}
}

func TestMyEnrollmentsErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    map[string]any
		respond func(*policy.Token, string, map[string]any) (json.RawMessage, error)
		want    string
	}{
		{"first too large", map[string]any{"first": 101}, nil, "first"},
		{"first zero", map[string]any{"first": 0}, nil, "first"},
		{"upstream down", nil, func(*policy.Token, string, map[string]any) (json.RawMessage, error) {
			return nil, errors.New("the school's Account API is unreachable")
		}, "unreachable"},
		{"graphql errors", nil, func(*policy.Token, string, map[string]any) (json.RawMessage, error) {
			return json.RawMessage(`{"data":null,"errors":[{"message":"not signed in"},{"message":"second"}]}`), nil
		}, "not signed in; second"},
		{"partial data with errors is still an error", nil, func(*policy.Token, string, map[string]any) (json.RawMessage, error) {
			return json.RawMessage(`{"data":{"viewer":{"id":"m","enrolledCourses":{"nodes":[]}}},"errors":[{"message":"field failed"}]}`), nil
		}, "field failed"},
		{"no viewer", nil, func(*policy.Token, string, map[string]any) (json.RawMessage, error) {
			return json.RawMessage(`{"data":{"viewer":null}}`), nil
		}, "no data"},
		{"not json", nil, func(*policy.Token, string, map[string]any) (json.RawMessage, error) {
			return json.RawMessage(`<html>`), nil
		}, "not a GraphQL response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.account.respond = tt.respond
			h.failTool("member", toolMyEnrollments, tt.args, tt.want)
		})
	}
}

func TestAccountQuery(t *testing.T) {
	h := newHarness(t)
	h.account.respond = func(id *policy.Token, q string, vars map[string]any) (json.RawMessage, error) {
		return json.RawMessage(`{"data":{"viewer":{"email":"` + id.Email + `"}}}`), nil
	}
	q := `query($n: Int) { viewer { email enrolledCourses(first: $n) { nodes { slug } } } }`
	tr := h.okTool("member", toolAccountQuery, map[string]any{"query": q, "variables": map[string]any{"n": 3}}, nil)
	if !strings.Contains(tr.text(), "mia@example.com") {
		t.Fatalf("raw response not returned: %s", tr.text())
	}
	call := h.account.last(t)
	if call.id.Subject != "m-1" || call.query != q || call.variables["n"] != 3.0 {
		t.Fatalf("call %+v", call)
	}

	h.okTool("writer", toolAccountQuery, map[string]any{"query": `mutation { cancelRegistration(id: "r1") { ok } }`}, nil)
	if h.account.last(t).id.Subject != "m-2" {
		t.Fatal("mutation with account:write must reach the Account API as the member")
	}
}

func TestAccountQueryRefusals(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name, token string
		args        any
		want        string
	}{
		{"subscription", "writer", map[string]any{"query": `subscription { progress { slug } }`}, "Subscriptions"},
		{"syntax error", "member", map[string]any{"query": `{ viewer { id }`}, "syntax"},
		{"two operations", "member", map[string]any{"query": `query A { a } query B { b }`}, "exactly one"},
		{"only fragments", "member", map[string]any{"query": `fragment F on Viewer { id }`}, "no operation"},
		{"missing query", "member", map[string]any{}, "query"},
		{"variables not an object", "member", map[string]any{"query": "{ viewer { id } }", "variables": []any{1}}, "variables"},
		{"oversize query", "member", map[string]any{"query": "{ viewer { id } }" + strings.Repeat(" ", maxQueryBytes)}, "longer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.as(t).failTool(tt.token, toolAccountQuery, tt.args, tt.want)
		})
	}
	if n := h.account.count(); n != 0 {
		t.Fatalf("refused queries reached the Account API %d times", n)
	}
}

func TestAccountQueryUpstreamAnswers(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		err     error
		isError bool
	}{
		{"data", `{"data":{"viewer":{"id":"m"}}}`, nil, false},
		{"partial data with errors", `{"data":{"viewer":{"id":"m","orders":null}},"errors":[{"message":"orders failed"}]}`, nil, false},
		{"errors only", `{"data":null,"errors":[{"message":"Cannot query field"}]}`, nil, true},
		{"not an object", `[1,2]`, nil, true},
		{"empty", ``, nil, true},
		{"transport error", ``, errors.New("the school's Account API answered 502"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.account.respond = func(*policy.Token, string, map[string]any) (json.RawMessage, error) {
				return json.RawMessage(tt.raw), tt.err
			}
			tr := h.callTool("member", toolAccountQuery, map[string]any{"query": "{ viewer { id } }"})
			if tr.IsError != tt.isError {
				t.Fatalf("isError %v, want %v: %s", tr.IsError, tt.isError, tr.text())
			}
			if tt.err != nil && !strings.Contains(tr.text(), "502") {
				t.Fatalf("upstream error not shown: %s", tr.text())
			}
		})
	}
}

func TestAccountNotConfigured(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Account = nil })
	h.failTool("member", toolMyEnrollments, map[string]any{}, "not configured")
}

func TestPanickingUpstreamIsToolError(t *testing.T) {
	h := newHarness(t)
	h.account.respond = func(*policy.Token, string, map[string]any) (json.RawMessage, error) { panic("boom") }
	h.failTool("member", toolMyEnrollments, map[string]any{}, "internal error")
	if !strings.Contains(h.logs.String(), "boom") {
		t.Fatal("the panic must be logged")
	}
	h.okTool("", toolSearchCatalog, map[string]any{"query": "x"}, nil)
}
