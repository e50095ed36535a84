package caddymodule

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/spf13/cobra"

	"github.com/schoolgate/schoolgate/adminapi"
)

// adminAnswer is an admin API answer as Caddy's admin server gives it: an
// error is its APIError's status.
type adminAnswer struct {
	code   int
	header http.Header
	body   string
}

// adminDo runs an admin route's handler on a request to target (a body
// makes it a POST).
func adminDo(t *testing.T, h caddy.AdminHandlerFunc, target, body string) adminAnswer {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	if body != "" {
		r = httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	}
	rec := httptest.NewRecorder()
	err := h(rec, r)
	if err == nil {
		return adminAnswer{rec.Code, rec.Header(), rec.Body.String()}
	}
	var apiErr caddy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("%s: %v is no APIError (a 500)", target, err)
	}
	return adminAnswer{apiErr.HTTPStatus, rec.Header(), apiErr.Err.Error()}
}

// brokenData is a data directory whose school.db is a directory: a
// school on it fails to build.
func (tp *testPlatform) brokenData(t *testing.T) string {
	t.Helper()
	broken := filepath.Join(tp.root, "broken")
	if err := os.MkdirAll(filepath.Join(broken, "school.db"), 0o700); err != nil {
		t.Fatal(err)
	}
	return broken
}

// The admin API's operations on one school find a platform's school by
// its issuer in any spelling, building it if idle; an alias is no issuer,
// a disabled school is a 409, a failed one the 503 with Retry-After that
// its requests get, an unknown one a 404. (Reads do not build a school:
// TestPlatformAdminReadsIdle.)
func TestPlatformAdminOperations(t *testing.T) {
	tp := newTestPlatform(t, 10)
	broken := tp.brokenData(t)
	tp.put(t, "https://a.example", []string{"www.a.example"}, "")
	tp.put(t, "https://failed.example", nil, `,"data":`+strconv.Quote(broken))
	off := tp.put(t, "https://off.example", nil, "")
	off.Disabled = true
	if _, err := tp.reg.Put(t.Context(), off); err != nil {
		t.Fatal(err)
	}
	tp.do(t, "https://failed.example"+discoveryPath)
	runningAs(t, tp.app)

	ans := adminDo(t, handleMCPConnections, "/schoolgate/mcp-connections", `{"issuer":"HTTPS://A.Example:443/","enabled":true}`)
	if ans.code != http.StatusOK || !tp.school("https://a.example").IsActive() {
		t.Fatalf("an idle school's operation: %d %s, %s", ans.code, ans.body, tp.school("https://a.example").state())
	}
	if ans := adminDo(t, handleMCPConnections, "/schoolgate/mcp-connections?issuer=https://a.example", ""); ans.body != "{\"enabled\":true}\n" {
		t.Errorf("the switch as stored: %d %s", ans.code, ans.body)
	}
	for _, tt := range []struct {
		issuer string
		code   int
		says   string
	}{
		{"https://www.a.example", http.StatusNotFound, "no school with issuer https://www.a.example"},
		{"https://nobody.example", http.StatusNotFound, "no school"},
		{"https://off.example", http.StatusConflict, "disabled"},
		{"https://failed.example", http.StatusServiceUnavailable, "school.db"},
	} {
		ans := adminDo(t, handleMCPConnections, "/schoolgate/mcp-connections", `{"issuer":"`+tt.issuer+`","enabled":false}`)
		if ans.code != tt.code || !strings.Contains(ans.body, tt.says) {
			t.Errorf("%s: %d %s, want %d saying %q", tt.issuer, ans.code, ans.body, tt.code, tt.says)
		}
		if retry := ans.header.Get("Retry-After"); (tt.code == http.StatusServiceUnavailable) != (retry != "") {
			t.Errorf("%s: Retry-After %q", tt.issuer, retry)
		}
	}
	if tp.school("https://off.example").IsActive() {
		t.Error("the disabled school was built")
	}
}

// A school held by an admin operation is not let go of past max_active
// while the operation lasts (the school of a request is, once idle); once
// it ended, it is the one let go of.
func TestPlatformAdminHoldsSchool(t *testing.T) {
	tp := newTestPlatform(t, 1)
	tp.put(t, "https://a.example", nil, "")
	tp.put(t, "https://b.example", nil, "")
	runningAs(t, tp.app)
	s, release, err := siteOf(httptest.NewRecorder(), "https://a.example")
	if err != nil {
		t.Fatal(err)
	}
	if got := issuerOf(tp.do(t, "https://b.example"+discoveryPath)); got != "https://b.example" {
		t.Fatalf("b: %q", got)
	}
	a, b := tp.school("https://a.example"), tp.school("https://b.example")
	if !a.IsActive() || !storeOpen(tp.dataFile(a.rec.Issuer)) || b.IsActive() {
		t.Fatalf("past max_active, a held by an operation is %s and b, idle, is %s", a.state(), b.state())
	}
	if _, err := s.Auth().ListClients(t.Context()); err != nil {
		t.Fatalf("the held school's store: %v", err)
	}
	release()
	tp.do(t, "https://b.example"+discoveryPath)
	if a.IsActive() || storeOpen(tp.dataFile(a.rec.Issuer)) || tp.activeCount() != 1 {
		t.Errorf("the school is still built after the operation: %s, %d active", a.state(), tp.activeCount())
	}
}

// `caddy schoolgate rotate-keys` reaches a platform's idle school through
// Caddy's admin server: the key it publishes is in the school's bbolt
// file, and there after the school is let go of and built again.
func TestPlatformCommandRotateKeys(t *testing.T) {
	tp := newTestPlatform(t, 1)
	tp.put(t, "https://a.example", nil, "")
	tp.put(t, "https://b.example", nil, "")
	runningAs(t, tp.app)
	addr := runAdminServer(t)

	out, err := runCommand(t, "rotate-keys", "--address", addr, "--issuer", "https://A.example")
	if err != nil {
		t.Fatal(err)
	}
	var rotated struct {
		KID string `json:"kid"`
	}
	if err := json.Unmarshal([]byte(out), &rotated); err != nil || rotated.KID == "" {
		t.Fatalf("rotate-keys: %q (%v)", out, err)
	}
	tp.do(t, "https://b.example"+discoveryPath) // a is let go of
	if tp.school("https://a.example").IsActive() {
		t.Fatal("a was not let go of past max_active")
	}
	jwks := tp.do(t, "https://a.example/.well-known/jwks.json")
	if !strings.Contains(jwks.Body.String(), `"kid":"`+rotated.KID+`"`) {
		t.Errorf("the rotated key is not published by the school built again from its store: %s", jwks.Body)
	}
	if _, err := runCommand(t, "clients", "--address", addr, "--issuer", "https://nobody.example"); err == nil ||
		!strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("an unknown school: %v", err)
	}
}

// `caddy schoolgate health --issuer` checks one school of a platform,
// which the platform's part of the health check does not visit; a failed
// one exits with the 503.
func TestPlatformCommandHealthOfOne(t *testing.T) {
	tp := newTestPlatform(t, 10)
	broken := tp.brokenData(t)
	tp.put(t, "https://a.example", nil, "")
	tp.put(t, "https://failed.example", nil, `,"data":`+strconv.Quote(broken))
	tp.do(t, "https://a.example"+discoveryPath)
	tp.do(t, "https://failed.example"+discoveryPath)
	runningAs(t, tp.app)
	addr := runAdminServer(t)

	out, err := runCommand(t, "health", "--address", addr)
	if err != nil || strings.Contains(out, `"issuer":"https://a.example"`) {
		t.Errorf("health: %v %s; want 200 without the built school's own check", err, out)
	}
	out, err = runCommand(t, "health", "--address", addr, "--issuer", "https://A.example")
	if err != nil || !strings.Contains(out, `"issuer":"https://a.example","healthy":true,"store":"ok"`) {
		t.Errorf("health --issuer: %v %s", err, out)
	}
	if _, err := runCommand(t, "health", "--address", addr, "--issuer", "https://failed.example"); err == nil ||
		!strings.Contains(err.Error(), "HTTP 503") {
		t.Errorf("health --issuer of a failed school: %v", err)
	}
}

// runAdminServer runs Caddy with its admin endpoint on a loopback port and
// no app, and returns the endpoint's address.
func runAdminServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	cfg, err := json.Marshal(map[string]any{
		"admin":   map[string]any{"listen": addr, "config": map[string]any{"persist": false}},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"writer": map[string]any{"output": "discard"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := caddy.Load(cfg, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := caddy.Stop(); err != nil {
			t.Error(err)
		}
	})
	return addr
}

// runCommand runs `caddy schoolgate <args>` and returns what it printed.
func runCommand(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := &cobra.Command{Use: "schoolgate", SilenceUsage: true, SilenceErrors: true}
	schoolgateCommands(root)
	root.SetArgs(args)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	err = root.Execute()
	os.Stdout = stdout
	w.Close()
	return string(<-done), err
}

// backup --all copies every school of a registry dir's platform, an idle
// one built for its copy and let go of past max_active as any other; the
// disabled and failed ones are skipped, each with its reason.
func TestPlatformBackupAll(t *testing.T) {
	tp := newTestPlatform(t, 1)
	broken := tp.brokenData(t)
	for _, s := range []string{"a", "b", "c"} {
		tp.put(t, "https://"+s+".example", nil, "")
	}
	tp.put(t, "https://failed.example", nil, `,"data":`+strconv.Quote(broken))
	off := tp.put(t, "https://off.example", nil, "")
	off.Disabled = true
	if _, err := tp.reg.Put(t.Context(), off); err != nil {
		t.Fatal(err)
	}
	tp.do(t, "https://b.example"+discoveryPath)
	runningAs(t, tp.app)
	dir := t.TempDir()
	ans := adminDo(t, handleBackup, "/schoolgate/backup", `{"all":true,"dir":`+strconv.Quote(dir)+`}`)
	var out struct {
		Backups []adminapi.BackupResult `json:"backups"`
		Skipped []adminapi.BackupSkip   `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(ans.body), &out); err != nil || ans.code != http.StatusOK {
		t.Fatalf("%d %s", ans.code, ans.body)
	}
	var copied []string
	for _, b := range out.Backups {
		copied = append(copied, b.Issuer)
		if b.File != filepath.Join(dir, adminapi.BackupName(b.Issuer)) || b.Bytes == 0 {
			t.Errorf("%+v", b)
		}
	}
	if strings.Join(copied, " ") != "https://a.example https://b.example https://c.example" {
		t.Errorf("copied %v", copied)
	}
	if len(out.Skipped) != 2 || !strings.Contains(out.Skipped[0].Reason, "failed to load") ||
		!strings.Contains(out.Skipped[1].Reason, "disabled") {
		t.Errorf("skipped %+v", out.Skipped)
	}
	if tp.activeCount() != 1 {
		t.Errorf("%d schools built after the backup, max_active 1", tp.activeCount())
	}
}
