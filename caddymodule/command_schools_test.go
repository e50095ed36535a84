package caddymodule

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// adminServer serves the schoolgate admin routes as Caddy's admin server
// does (an APIError is its status and {"error": …}), for the commands.
func adminServer(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	for _, route := range (adminAPI{}).Routes() {
		h := route.Handler
		mux.HandleFunc(route.Pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := h.ServeHTTP(w, r); err != nil {
				var apiErr caddy.APIError
				if !errors.As(err, &apiErr) {
					apiErr = caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: err}
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(apiErr.HTTPStatus)
				_ = json.NewEncoder(w).Encode(map[string]string{"error": apiErr.Err.Error()})
			}
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// runSchools runs `caddy schoolgate schools <args>` and returns its output.
func runSchools(t *testing.T, address string, args ...string) (string, error) {
	t.Helper()
	cmd := schoolsCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	if address != "" && len(args) > 0 && args[0] != "import" {
		args = append(args, "--address", address)
	}
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// The schools commands write and read a platform's registry through the
// admin API: add refuses a school the registry has, set replaces what its
// flags name and keeps the rest (conditionally on the version it read),
// list prints a table, show the record, remove removes it; a refusal is
// an error carrying the API's message, as for the other commands.
func TestSchoolsCommands(t *testing.T) {
	tp := newTestPlatform(t, 10)
	runningAs(t, tp.app)
	addr := adminServer(t)
	cfgFile := filepath.Join(t.TempDir(), "school.json")
	if err := os.WriteFile(cfgFile, []byte(`{"upstream":"http://127.0.0.1:1","code_ttl":"30s"}`), 0o600); err != nil {
		t.Fatal(err)
	}

	if out, err := runSchools(t, addr, "add", "https://a.example", "--upstream", "http://127.0.0.1:9",
		"--host", "www.a.example", "--config", cfgFile); err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	rec := tp.school("https://a.example").rec
	if !strings.Contains(string(rec.Config), `"upstream":"http://127.0.0.1:9"`) || !strings.Contains(string(rec.Config), "code_ttl") ||
		len(rec.Hosts) != 1 || rec.Hosts[0] != "www.a.example" {
		t.Errorf("added: %+v %s (the flag's upstream wins, the file's options stay)", rec, rec.Config)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "https://a.example", "--upstream", "http://127.0.0.1:9"}, "HTTP 409"},
		{[]string{"add", "https://b.example"}, "--upstream is required"},
		{[]string{"add", "https://b.example", "--upstream", "http://127.0.0.1:9", "--host", "WWW.A.EXAMPLE"}, "www.a.example is a host of https://a.example"},
		{[]string{"add", "https://b.example", "--upstream", "ftp://x"}, "HTTP 400"},
		{[]string{"add", "https://b.example", "--config", "/nonexistent.json"}, "--config"},
		{[]string{"set", "https://z.example", "--upstream", "http://127.0.0.1:9"}, "HTTP 404"},
		{[]string{"set", "https://a.example", "--disable", "--enable"}, "say one"},
		{[]string{"remove", "https://z.example"}, "HTTP 404"},
		{[]string{"show", "https://z.example"}, "HTTP 404"},
		{[]string{"show", "https://a.example", "--platform", "postgres"}, "HTTP 404"},
	} {
		if out, err := runSchools(t, addr, tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v\n%s, want an error with %q", tt.args, err, out, tt.want)
		}
	}
	if _, err := runSchools(t, addr, "add", "https://b.example", "--upstream", "http://127.0.0.1:9"); err != nil {
		t.Fatal(err)
	}

	if out, err := runSchools(t, addr, "set", "https://a.example", "--disable", "--upstream", "http://127.0.0.1:7"); err != nil {
		t.Fatalf("set: %v\n%s", err, out)
	}
	rec = tp.school("https://a.example").rec
	if !rec.Disabled || rec.Version != 2 || !strings.Contains(string(rec.Config), "127.0.0.1:7") ||
		!strings.Contains(string(rec.Config), "code_ttl") || len(rec.Hosts) != 1 {
		t.Errorf("set: %+v %s, want disabled, the new upstream, the options and hosts kept", rec, rec.Config)
	}
	if _, err := runSchools(t, addr, "set", "https://a.example", "--enable", "--no-hosts"); err != nil {
		t.Fatal(err)
	}
	if rec = tp.school("https://a.example").rec; rec.Disabled || len(rec.Hosts) != 0 {
		t.Errorf("set --enable --no-hosts: %+v", rec)
	}

	out, err := runSchools(t, addr, "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 3 || !strings.HasPrefix(lines[0], "ISSUER") ||
		!strings.HasPrefix(lines[1], "https://a.example") || !strings.Contains(lines[1], "idle") ||
		!strings.Contains(lines[1], " 3 ") || !strings.HasPrefix(lines[2], "https://b.example") {
		t.Errorf("list: %v\n%s", err, out)
	}
	out, err = runSchools(t, addr, "show", "https://A.example")
	var shown schoolView
	if err != nil || json.Unmarshal([]byte(out), &shown) != nil || shown.Version != 3 || !strings.Contains(string(shown.Config), "code_ttl") {
		t.Errorf("show: %v\n%s", err, out)
	}
	if out, err := runSchools(t, addr, "remove", "https://a.example"); err != nil {
		t.Fatalf("remove: %v\n%s", err, out)
	}
	if tp.school("https://a.example") != nil {
		t.Error("the school removed is still served")
	}
}
