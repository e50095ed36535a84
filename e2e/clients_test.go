package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientsThroughAdminAPI drives the admin area's operations through
// Caddy's admin API, as an operator's automation would, and checks their
// effect on the running site.
func TestClientsThroughAdminAPI(t *testing.T) {
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	gw := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "site"), ""))
	admin := "http://" + gw.AdminAddr + "/schoolgate"
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	setSwitch := func(on bool) {
		t.Helper()
		r := postJSON(t, admin+"/mcp-connections", map[string]any{"issuer": gw.URL, "enabled": on})
		if r.status != 200 || jsonOf(t, r.body)["enabled"] != on {
			t.Fatalf("switch %v: %d %s", on, r.status, r.body)
		}
	}
	app := map[string]any{"issuer": gw.URL, "client_name": "Study Planner", "redirect_uris": []string{redirect},
		"scopes": []string{"openid", "account:read"}, "idempotency_key": "planner-1"}

	setSwitch(false)
	if _, _, body := get(t, admin+"/mcp-connections?issuer="+gw.URL); jsonOf(t, body)["enabled"] != false {
		t.Fatalf("switch state: %s", body)
	}
	if r := postJSON(t, admin+"/clients", app); r.status != http.StatusConflict {
		t.Fatalf("create while off: %d %s", r.status, r.body)
	}
	setSwitch(true)

	r := postJSON(t, admin+"/clients", app)
	created := jsonOf(t, r.body)
	id, _ := created["client_id"].(string)
	if r.status != http.StatusCreated || !strings.HasPrefix(id, "app_") || created["client_secret"] != nil ||
		created["token_endpoint_auth_method"] != "none" || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if r := postJSON(t, admin+"/clients", app); r.status != 200 || jsonOf(t, r.body)["client_id"] != id {
		t.Errorf("same idempotency key: %d %s", r.status, r.body)
	}
	conf := map[string]any{"issuer": gw.URL, "client_name": "Billing", "redirect_uris": []string{"https://billing.example/cb"},
		"scopes": []string{"account:read"}, "confidential": true}
	if r := postJSON(t, admin+"/clients", conf); r.status != 201 ||
		!strings.HasPrefix(fmt.Sprint(jsonOf(t, r.body)["client_secret"]), "sgcs_") {
		t.Errorf("confidential: %d %s", r.status, r.body)
	}
	for _, bad := range []map[string]any{
		{"issuer": gw.URL, "client_name": "X", "redirect_uris": []string{"http://evil.example/cb"}, "scopes": []string{"openid"}},
		{"issuer": gw.URL, "client_name": "X", "redirect_uris": []string{redirect}, "scopes": []string{"courses:write"}},
		{"issuer": gw.URL, "client_name": "", "redirect_uris": []string{redirect}, "scopes": []string{"openid"}},
	} {
		if r := postJSON(t, admin+"/clients", bad); r.status != 400 || !strings.Contains(string(r.body), "error") {
			t.Errorf("bad app %v: %d %s", bad, r.status, r.body)
		}
	}
	if r := postJSON(t, admin+"/clients", map[string]any{"issuer": "http://nowhere.example"}); r.status != 404 {
		t.Errorf("unknown school: %d", r.status)
	}
	_, _, list := get(t, admin+"/clients?issuer="+gw.URL)
	if !strings.Contains(string(list), id) || strings.Contains(string(list), "secret_hash") {
		t.Errorf("list: %s", list)
	}

	// A student authorizes the application; switching MCP connections off
	// disconnects it at once.
	tok := tokenFor(t, gw.URL, id, redirect, "openid account:read", "student@demo.school", "student")
	if r := call(t, "POST", gw.URL+"/account/graphql", tok.AccessToken, viewerQuery, nil); r.status != 200 {
		t.Fatalf("account API with the app's token: %d %s", r.status, r.body)
	}
	setSwitch(false)
	if r := call(t, "POST", gw.URL+"/account/graphql", tok.AccessToken, viewerQuery, nil); r.status != 401 {
		t.Errorf("after switching off: %d", r.status)
	}
	setSwitch(true)
	tok = tokenFor(t, gw.URL, id, redirect, "openid account:read", "student@demo.school", "student")

	// Review applies to metadata-document clients only.
	if r := postJSON(t, admin+"/clients/review", map[string]any{"issuer": gw.URL, "client_id": id,
		"scopes": []string{"openid"}, "reviewed": true}); r.status != http.StatusConflict {
		t.Errorf("review of an app: %d %s", r.status, r.body)
	}
	if r := postJSON(t, admin+"/clients/review", map[string]any{"issuer": gw.URL, "client_id": "https://x.example/c.json",
		"scopes": []string{"openid"}, "reviewed": true}); r.status != http.StatusNotFound {
		t.Errorf("review of an unknown client: %d %s", r.status, r.body)
	}

	r = postJSON(t, admin+"/clients/delete", map[string]any{"issuer": gw.URL, "client_id": id})
	if n, _ := jsonOf(t, r.body)["grants_revoked"].(float64); r.status != 200 || n < 1 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := call(t, "POST", gw.URL+"/account/graphql", tok.AccessToken, viewerQuery, nil); r.status != 401 {
		t.Errorf("a deleted application's token: %d", r.status)
	}
	if r := postJSON(t, admin+"/clients/delete", map[string]any{"issuer": gw.URL, "client_id": id}); r.status != 404 {
		t.Errorf("deleting twice: %d", r.status)
	}
	req := mustRequest(t, "PUT", admin+"/clients")
	req.Header.Set("Content-Type", "application/json")
	if r := do(t, req); r.status != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d", r.status)
	}
}

// TestSchoolgateCommand: `caddy schoolgate …` reaches the same operations
// through the admin API of a running Caddy.
func TestSchoolgateCommand(t *testing.T) {
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	gw := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "site"), ""))
	run := func(args ...string) (string, error) {
		t.Helper()
		args = append([]string{"schoolgate"}, args...)
		args = append(args, "--address", gw.AdminAddr)
		out, err := exec.Command(caddyBin, args...).CombinedOutput()
		return string(out), err
	}
	mustRun := func(args ...string) map[string]any {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("caddy schoolgate %v: %v\n%s", args, err, out)
		}
		var m map[string]any
		if strings.HasPrefix(strings.TrimSpace(out), "{") {
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("caddy schoolgate %v printed no JSON: %s", args, out)
			}
		}
		return m
	}
	if m := mustRun("mcp-connections", "off", "--issuer", gw.URL); m["enabled"] != false {
		t.Fatalf("switch off: %v", m)
	}
	if m := mustRun("mcp-connections", "--issuer", gw.URL); m["enabled"] != false {
		t.Fatalf("switch state: %v", m)
	}
	if out, err := run("create-client", "--issuer", gw.URL, "--name", "X", "--redirect-uri", "https://x.example/cb", "--scope", "openid"); err == nil || !strings.Contains(out, "409") {
		t.Errorf("create while off: %v %s", err, out)
	}
	mustRun("mcp-connections", "on", "--issuer", gw.URL)
	app := mustRun("create-client", "--issuer", gw.URL, "--name", "Planner", "--redirect-uri", "https://planner.example/cb",
		"--scope", "openid", "--scope", "account:read", "--confidential")
	id, _ := app["client_id"].(string)
	if !strings.HasPrefix(id, "app_") || !strings.HasPrefix(fmt.Sprint(app["client_secret"]), "sgcs_") {
		t.Fatalf("create-client: %v", app)
	}
	if out, err := run("clients", "--issuer", gw.URL); err != nil || !strings.Contains(out, id) || strings.Contains(out, "sgcs_") {
		t.Errorf("clients: %v %s", err, out)
	}
	if m := mustRun("delete-client", id, "--issuer", gw.URL); m["deleted"] != id {
		t.Errorf("delete-client: %v", m)
	}
	if out, err := run("delete-client", id, "--issuer", gw.URL); err == nil || !strings.Contains(out, "no such client") {
		t.Errorf("deleting twice: %v %s", err, out)
	}
	if out, err := run("mcp-connections", "maybe", "--issuer", gw.URL); err == nil || !strings.Contains(out, "on or off") {
		t.Errorf("a bad switch value: %v %s", err, out)
	}
	if m := mustRun("health"); m["healthy"] != true {
		t.Errorf("health: %v", m)
	}
	for _, name := range []string{"running", "sites"} { // sites: running's old name
		if out, err := run(name); err != nil || !strings.Contains(out, gw.URL) {
			t.Errorf("%s: %v %s", name, err, out)
		}
	}
	if m := mustRun("rotate-keys", "--issuer", gw.URL); m["kid"] == nil {
		t.Errorf("rotate-keys: %v", m)
	}
}
