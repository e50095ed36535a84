package operator

import (
	"errors"
	"maps"
	"net/http"
	"strings"
	"testing"
)

// An answer of the admin API without a message (the health check's
// report with its 503) is kept whole for the command to print; one that
// is no JSON is its own message. caddymodule's TestAdminErrorsInPlainWords
// holds the refusals of a real admin API.
func TestPlainError(t *testing.T) {
	report := `{"healthy":false,"sites":[]}`
	err := PlainError("localhost:2019", errors.New(RefusedPrefix+"503: "+report+"\n"))
	var refused *AdminError
	if !errors.As(err, &refused) || refused.Status != http.StatusServiceUnavailable ||
		strings.TrimSpace(string(refused.Answer)) != report || err.Error() != "the admin API answered Service Unavailable (HTTP 503)" {
		t.Errorf("an answer without a message: %#v %v", refused, err)
	}
	if err := PlainError("localhost:2019", errors.New(RefusedPrefix+"500: not JSON")); err.Error() != "not JSON (HTTP 500)" {
		t.Errorf("an answer that is no JSON: %v", err)
	}
}

// The commands' flags become the routes' query and body.
func TestAuditCommands(t *testing.T) {
	cmds := auditCommands(AdminAPI{})
	list, subject := cmds[0], cmds[1]
	if list.Name() != "audit" || subject.Name() != "subject" || len(subject.Commands()) != 2 {
		t.Fatalf("commands are %s and %s with %d", list.Name(), subject.Name(), len(subject.Commands()))
	}
	if err := list.ParseFlags([]string{"--subject", "member-1", "--type", "code_replay", "--since", "24h", "--limit", "20"}); err != nil {
		t.Fatal(err)
	}
	want := "/schoolgate/audit?issuer=https%3A%2F%2Fschool.example&limit=20&since=24h&subject=member-1&type=code_replay"
	if got := auditPath(list, "https://school.example"); got != want {
		t.Errorf("query = %s, want %s", got, want)
	}
	for _, c := range subject.Commands() {
		if err := c.Args(c, nil); err == nil {
			t.Errorf("subject %s takes no person", c.Name())
		}
	}
}

// The commands' flags become the routes' query and body.
func TestGrantCommands(t *testing.T) {
	cmds := grantCommands(AdminAPI{})
	list, revoke := cmds[0], cmds[1]
	if err := list.ParseFlags([]string{"--client-id", "app_1", "--after", "abc", "--limit", "20"}); err != nil {
		t.Fatal(err)
	}
	got := grantsQuery(list, "https://school.example")
	want := "/schoolgate/grants?after=abc&client_id=app_1&issuer=https%3A%2F%2Fschool.example&limit=20"
	if got != want {
		t.Errorf("query = %s, want %s", got, want)
	}
	if revoke.Name() != "revoke-grant" || list.Name() != "grants" {
		t.Errorf("commands are %s and %s", list.Name(), revoke.Name())
	}
	if err := revoke.Args(revoke, []string{"g1", "g2"}); err == nil {
		t.Error("revoke-grant takes two grant ids")
	}
	for _, tc := range []struct {
		name  string
		flags []string
		args  []string
		want  map[string]string
		err   string
	}{
		{"one grant", []string{"--subject", "member-1"}, []string{"g1"},
			map[string]string{"issuer": "https://school.example", "grant_id": "g1", "subject": "member-1"}, ""},
		{"an application", []string{"--subject", "member-1", "--client-id", "app_1"}, nil,
			map[string]string{"issuer": "https://school.example", "client_id": "app_1", "subject": "member-1"}, ""},
		{"both", []string{"--subject", "member-1", "--client-id", "app_1"}, []string{"g1"}, nil, "not both"},
		{"neither", []string{"--subject", "member-1"}, nil, nil, "--client-id"},
		{"no person", []string{"--client-id", "app_1"}, nil, nil, "--subject"},
	} {
		cmd := grantCommands(AdminAPI{})[1]
		if err := cmd.ParseFlags(tc.flags); err != nil {
			t.Fatal(err)
		}
		body, err := revokeBody(cmd, "https://school.example", tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error saying %s", tc.name, err, tc.err)
			}
			continue
		}
		if got, ok := body.(map[string]string); err != nil || !ok || !maps.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, body, err, tc.want)
		}
	}
}
