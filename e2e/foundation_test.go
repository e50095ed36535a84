package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

func jsonOf(t testing.TB, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, body)
	}
	return m
}

func kids(t testing.TB, origin string) []string {
	t.Helper()
	status, _, body := get(t, origin+"/.well-known/jwks.json")
	if status != 200 {
		t.Fatalf("jwks: %d", status)
	}
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range set.Keys {
		if k["alg"] != "ES256" || k["use"] != "sig" || k["kty"] != "EC" || k["crv"] != "P-256" {
			t.Errorf("key %v is not an ES256 signing key", k)
		}
		if _, private := k["d"]; private {
			t.Fatal("the JWKS publishes a private key")
		}
		out = append(out, k["kid"].(string))
	}
	return out
}

func TestDiscoveryJWKSAndPassThrough(t *testing.T) {
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	gw := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "site"), ""))

	status, hdr, body := get(t, gw.URL+"/.well-known/oauth-protected-resource")
	if status != 200 || hdr.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("protected resource metadata: %d %v", status, hdr)
	}
	prm := jsonOf(t, body)
	if prm["resource"] != gw.URL || !slices.Equal(toStrings(prm["authorization_servers"]), []string{gw.URL}) ||
		slices.Contains(toStrings(prm["scopes_supported"]), "offline_access") {
		t.Errorf("protected resource metadata: %v", prm)
	}

	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		status, _, body := get(t, gw.URL+path)
		if status != 200 {
			t.Fatalf("%s: %d", path, status)
		}
		m := jsonOf(t, body)
		want := map[string]any{
			"issuer":                                gw.URL,
			"authorization_endpoint":                gw.URL + "/oauth/authorize",
			"token_endpoint":                        gw.URL + "/api/oauth/token",
			"userinfo_endpoint":                     gw.URL + "/api/oauth/userinfo",
			"revocation_endpoint":                   gw.URL + "/api/oauth/revoke",
			"introspection_endpoint":                gw.URL + "/api/oauth/introspect",
			"registration_endpoint":                 gw.URL + "/api/oauth/register",
			"jwks_uri":                              gw.URL + "/.well-known/jwks.json",
			"client_id_metadata_document_supported": true,
			"authorization_response_iss_parameter_supported": true,
		}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s %s = %v, want %v", path, k, m[k], v)
			}
		}
		if !slices.Equal(toStrings(m["code_challenge_methods_supported"]), []string{"S256"}) {
			t.Errorf("%s: code_challenge_methods_supported %v", path, m["code_challenge_methods_supported"])
		}
		if !slices.Equal(toStrings(m["id_token_signing_alg_values_supported"]), []string{"ES256"}) {
			t.Errorf("%s: id_token_signing_alg_values_supported %v", path, m["id_token_signing_alg_values_supported"])
		}
		scopes := toStrings(m["scopes_supported"])
		for _, s := range []string{"openid", "profile", "email", "offline_access", "courses:read", "pages:write", "account:read", "account:write"} {
			if !slices.Contains(scopes, s) {
				t.Errorf("%s: scopes_supported lacks %s", path, s)
			}
		}
	}

	// The issuer comes from configuration, never from forwarding headers
	// (the site block's host matcher already refuses a foreign Host).
	req := mustRequest(t, "GET", gw.URL+"/.well-known/oauth-authorization-server")
	req.Header.Set("X-Forwarded-Host", "evil.example")
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("Forwarded", "host=evil.example;proto=https")
	resp := do(t, req)
	if m := jsonOf(t, resp.body); m["issuer"] != gw.URL {
		t.Errorf("issuer followed the Host header: %v", m["issuer"])
	}

	if len(kids(t, gw.URL)) != 1 {
		t.Error("want exactly one signing key on first start")
	}

	for _, path := range []string{"/.well-known/oauth-unknown", "/api/oauth/nothing", "/.well-known/oauth-protected-resource/mcp"} {
		status, hdr, body := get(t, gw.URL+path)
		if status != 404 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %s %s", path, status, hdr.Get("Content-Type"), body)
		}
	}

	status, _, body = get(t, gw.URL+"/")
	if status != 200 || !strings.Contains(string(body), "<html") {
		t.Errorf("/ was not proxied to the demo school: %d %.200s", status, body)
	}
}

func TestReloadKeepsKeysAndData(t *testing.T) {
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	block := siteBlock(port, sch.URL, filepath.Join(dir, "site"), "")
	gw := startGateway(t, dir, block)
	before := kids(t, gw.URL)
	client := registerLoopback(t, gw.URL)

	gw.reload(strings.Replace(block, "mcp_connections on", "mcp_connections off", 1))
	waitHTTP(t, gw.URL+"/.well-known/jwks.json")
	after := kids(t, gw.URL)
	if !slices.Equal(before, after) {
		t.Fatalf("signing keys changed across reload: %v -> %v", before, after)
	}
	// The client registered before the reload still exists.
	again := registerLoopback(t, gw.URL)
	if again != client {
		t.Errorf("registration after reload gave %s, want the existing %s", again, client)
	}
}

func TestTwoSchoolsAreIndependent(t *testing.T) {
	sch := startSchool(t)
	a, b := freePort(t), freePort(t)
	dir := t.TempDir()
	gw := startGateway(t, dir,
		siteBlock(a, sch.URL, filepath.Join(dir, "a"), ""),
		siteBlock(b, sch.URL, filepath.Join(dir, "b"), ""))
	urlA, urlB := gw.URL, fmt.Sprintf("http://127.0.0.1:%d", b)
	_, _, bodyA := get(t, urlA+"/.well-known/oauth-authorization-server")
	_, _, bodyB := get(t, urlB+"/.well-known/oauth-authorization-server")
	if jsonOf(t, bodyA)["issuer"] == jsonOf(t, bodyB)["issuer"] {
		t.Error("two sites share an issuer")
	}
	ka, kb := kids(t, urlA), kids(t, urlB)
	if slices.Equal(ka, kb) {
		t.Errorf("two sites share signing keys %v", ka)
	}
}

// TestInvalidConfigurationIsRejected: an error in the configuration (or a
// file shipped with it) fails adapt or validate, naming the option. A data
// directory that cannot be used is the school's data, not configuration:
// the school answers 503 and the others serve (TestBrokenSchools).
func TestInvalidConfigurationIsRejected(t *testing.T) {
	dir := t.TempDir()
	openapi31 := filepath.Join(dir, "openapi31.json")
	if err := os.WriteFile(openapi31, []byte(`{"openapi":"3.1.0","paths":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, body, want string
		validate         bool // the error shows at provision, not adapt
	}{
		{"unknown subdirective", "school_gateway http://127.0.0.1:9 {\n\t\tissuer http://127.0.0.1:1\n\t\tfrobnicate yes\n\t}", "frobnicate", false},
		{"missing upstream", "school_gateway", "upstream", false},
		{"bad upstream URL", "school_gateway ftp://x {\n\t\tissuer http://127.0.0.1:1\n\t}", "upstream", false},
		{"bad issuer", "school_gateway http://127.0.0.1:9 {\n\t\tissuer http://127.0.0.1:1/path\n\t}", "issuer", false},
		{"bad vendor", "school_gateway http://127.0.0.1:9 {\n\t\tvendor \"X\" {\n\t\t\tclient_id x\n\t\t}\n\t}", "redirect_uri", false},
		{"bad duration", "school_gateway http://127.0.0.1:9 {\n\t\taccess_token_ttl soon\n\t}", "access_token_ttl", false},
		{"bad switch", "school_gateway http://127.0.0.1:9 {\n\t\tmcp_connections maybe\n\t}", "mcp_connections", false},
		{"unknown scope in rule", "school_gateway http://127.0.0.1:9 {\n\t\trule GET /admin/api/x operator nope:read\n\t}", "nope:read", false},
		{"missing admin OpenAPI file", "school_gateway http://127.0.0.1:9 {\n\t\tdata " + filepath.Join(dir, "d1") +
			"\n\t\tadmin_openapi " + filepath.Join(dir, "nope.json") + "\n\t}", "admin_openapi", true},
		{"OpenAPI 3.1 admin document", "school_gateway http://127.0.0.1:9 {\n\t\tdata " + filepath.Join(dir, "d2") +
			"\n\t\tadmin_openapi " + openapi31 + "\n\t}", "3.0.x", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "Caddyfile")
			content := fmt.Sprintf("{\n\tadmin off\n}\nhttp://127.0.0.1:%d {\n\t%s\n}\n", freePort(t), tc.body)
			if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			verb := "adapt"
			if tc.validate {
				verb = "validate"
			}
			out, err := exec.Command(caddyBin, verb, "--config", cfg, "--adapter", "caddyfile").CombinedOutput()
			if err == nil {
				t.Fatalf("caddy %s accepted:\n%s\n%s", verb, content, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("caddy %s error does not mention %q:\n%s", verb, tc.want, out)
			}
		})
	}
}

func TestExampleCaddyfileAndModules(t *testing.T) {
	out, err := exec.Command(caddyBin, "adapt", "--config", "../Caddyfile.example", "--adapter", "caddyfile").CombinedOutput()
	if err != nil {
		t.Fatalf("caddy adapt Caddyfile.example: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"school_gateway"`) || !strings.Contains(string(out), `"schoolgate_upstream"`) {
		t.Errorf("adapted config lacks the gateway or the proxy:\n%s", out)
	}
	out, err = exec.Command(caddyBin, "list-modules").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"http.handlers.school_gateway", "http.handlers.schoolgate_upstream", "schoolgate"} {
		if !strings.Contains(string(out), m) {
			t.Errorf("list-modules lacks %s", m)
		}
	}
}

func toStrings(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// Key rotation through Caddy's admin API: the new key is published at
// once, the old one keeps signing until the publish delay has passed, and
// both survive a reload.
func TestKeyRotationThroughAdminAPI(t *testing.T) {
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	block := siteBlock(port, sch.URL, filepath.Join(dir, "site"), "")
	gw := startGateway(t, dir, block)
	before := kids(t, gw.URL)

	admin := "http://" + gw.AdminAddr
	resp := postJSON(t, admin+"/schoolgate/keys/rotate", map[string]string{"issuer": gw.URL})
	if resp.status != 200 {
		t.Fatalf("rotate: %d %s", resp.status, resp.body)
	}
	newKID, _ := jsonOf(t, resp.body)["kid"].(string)
	after := kids(t, gw.URL)
	if len(after) != 2 || !slices.Contains(after, before[0]) || !slices.Contains(after, newKID) {
		t.Fatalf("JWKS after rotation %v, want old %v and new %s", after, before, newKID)
	}
	// The old key still signs, so discovery keeps the ID-token fields.
	_, _, body := get(t, gw.URL+"/.well-known/openid-configuration")
	if jsonOf(t, body)["id_token_signing_alg_values_supported"] == nil {
		t.Error("discovery dropped the ID-token fields during rotation")
	}

	gw.reload(block)
	waitHTTP(t, gw.URL+"/.well-known/jwks.json")
	if got := kids(t, gw.URL); !slices.Equal(got, after) {
		t.Errorf("keys after reload %v, want %v", got, after)
	}

	_, _, sites := get(t, admin+"/schoolgate/sites")
	if !strings.Contains(string(sites), gw.URL) {
		t.Errorf("sites listing lacks %s: %s", gw.URL, sites)
	}
	for _, tc := range []struct {
		body   any
		status int
	}{
		{map[string]string{"issuer": "http://nowhere.example"}, 404},
		{map[string]string{}, 400},
	} {
		if r := postJSON(t, admin+"/schoolgate/keys/rotate", tc.body); r.status != tc.status {
			t.Errorf("rotate %v: %d, want %d (%s)", tc.body, r.status, tc.status, r.body)
		}
	}
}

// TestOpenAPIMergesTheSchoolsAdminAPI: the school's own admin OpenAPI
// document, fetched from the legacy server, shows up in /openapi.json with
// the gateway's security, and the result is valid for a strict validator.
func TestOpenAPIMergesTheSchoolsAdminAPI(t *testing.T) {
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	gw := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "site"),
		"\t\tadmin_openapi "+sch.URL+"/admin-openapi.json\n"))
	var raw []byte
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, _, raw = get(t, gw.URL+"/openapi.json")
		if strings.Contains(string(raw), "/admin/api/courses/{slug}") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("merged openapi.json is invalid: %v", err)
	}
	item := doc.Paths.Find("/admin/api/courses/{slug}")
	if item == nil || item.Get == nil || item.Get.OperationID != "school_getCourse" {
		t.Fatalf("the school's operation is not merged: %s", raw)
	}
	if sec := *item.Get.Security; len(sec) != 1 || strings.Join(sec[0]["oauth2"], " ") != "courses:read" {
		t.Errorf("security %v, want courses:read", sec)
	}
	if doc.Paths.Value("/admin/api/courses/{path}") != nil {
		t.Error("the generic operations of a described area are still there")
	}
	if doc.Paths.Value("/admin/api/coupons") == nil {
		t.Error("areas the school does not describe keep the generic operations")
	}
}
