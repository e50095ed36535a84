package caddymodule

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A running school and a registry's record have a word each: `running`
// (GET /schoolgate/running) lists what this Caddy serves now, `schools`
// writes and reads the registry. The old name of running, `sites` (GET
// /schoolgate/sites), answers alike.
func TestRunningAndItsOldName(t *testing.T) {
	tp := newTestPlatform(t, 10)
	tp.put(t, "https://a.example", nil, "")
	runningAs(t, tp.app)
	addr := runAdminServer(t)

	var answers []string
	for _, name := range []string{"running", "sites"} {
		out, err := runCommand(t, name, "--address", addr)
		var list []siteStatus
		if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 ||
			list[0].Issuer != "https://a.example" || list[0].State != "idle" {
			t.Errorf("caddy schoolgate %s: %v\n%s", name, err, out)
		}
		answers = append(answers, out)
	}
	for _, path := range []string{"/schoolgate/running", "/schoolgate/sites"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		answers = append(answers, string(body))
	}
	for _, a := range answers[1:] {
		if a != answers[0] {
			t.Errorf("the names answer differently:\n%s\n%s", answers[0], a)
		}
	}
}

// Every command prints a refusal of the admin API as its message in
// plain words, with its status, never the API's JSON; an answer that is
// no refusal's message (the health check's report with its 503) is
// printed as the answer; no admin API at the address says so.
func TestAdminErrorsInPlainWords(t *testing.T) {
	tp := newTestPlatform(t, 10)
	tp.put(t, "https://a.example", []string{"www.a.example"}, "")
	runningAs(t, tp.app)
	addr := runAdminServer(t)
	for _, tt := range []struct {
		name    string
		args    []string
		schools bool
		down    bool
		want    string
	}{
		{"a 404 of a school's operation", []string{"clients", "--issuer", "https://nobody.example"}, false, false,
			"no school with issuer https://nobody.example (HTTP 404)"},
		{"a 400", []string{"usage"}, false, false, "name the school: issuer=<the school's origin> (HTTP 400)"},
		{"a 400 with quotes", []string{"set", "https://a.example", "--option", "colour=red"}, true, false,
			`config: json: unknown field "colour" (HTTP 400)`},
		{"a 409", []string{"add", "https://b.example", "--upstream", "http://127.0.0.1:9", "--host", "www.a.example"}, true, false,
			"hosts: www.a.example is a host of https://a.example already (HTTP 409)"},
		{"a 503's description", []string{"show", "https://a.example"}, true, true,
			"reading https://a.example failed: the registry dir " + tp.root + " did not answer; try again shortly (HTTP 503)"},
		{"no admin API", []string{"running", "--address", "127.0.0.1:1"}, false, false,
			"no admin API answered at 127.0.0.1:1 (is Caddy running? --address names its admin endpoint)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tp.flaky.down.Store(tt.down)
			defer tp.flaky.down.Store(false)
			var err error
			switch {
			case tt.schools:
				_, err = runSchools(t, addr, tt.args...)
			case !strings.Contains(strings.Join(tt.args, " "), "--address"):
				_, err = runCommand(t, append(tt.args, "--address", addr)...)
			default:
				_, err = runCommand(t, tt.args...)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.ContainsAny(err.Error(), "{}\\") {
				t.Errorf("%v, want %q in plain words", err, tt.want)
			}
		})
	}

}

// The health check's 503 prints its report, and the command fails.
func TestHealthReportPrintedWhenUnhealthy(t *testing.T) {
	tp := newTestPlatform(t, 10)
	runningAs(t, tp.app)
	addr := runAdminServer(t)
	out, err := runCommand(t, "health", "--address", addr)
	if err != nil || !strings.Contains(out, `"healthy":true`) {
		t.Fatalf("healthy: %v\n%s", err, out)
	}
	tp.watch.Failed(errRegistryDown)
	defer func() { _ = tp.watch.Retry() }()
	out, err = runCommand(t, "health", "--address", addr)
	if err == nil || err.Error() != "the admin API answered Service Unavailable (HTTP 503)" ||
		!strings.Contains(out, `"healthy":false`) || !strings.Contains(out, errRegistryDown.Error()) {
		t.Errorf("unhealthy: %v\n%s", err, out)
	}
}
