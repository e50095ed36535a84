package e2e

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Moving in: a Caddy serves two schools from school_gateway site blocks
// and issues a member's tokens; it stops; caddy schoolgate schools import
// turns its Caddyfile into the records of a registry dir; a Caddy with
// school_platform on that registry serves the same schools with the same
// data: the access token works, the refresh token rotates, the same keys
// sign (JWKS unchanged). The schools commands then add a third school,
// served at once without a reload, and remove it (404 at once).
func TestPlatformImport(t *testing.T) {
	sch := startSchool(t)
	dir := t.TempDir()
	portA, portB := freePort(t), freePort(t)
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	clients := vendorBlock("Member App", "member-app", redirect, "member", "openid account:read")
	gw := startGateway(t, filepath.Join(dir, "blocks"),
		siteBlock(portA, sch.URL, filepath.Join(dir, "a"), clients), siteBlock(portB, sch.URL, filepath.Join(dir, "b"), clients))
	type before struct {
		access, refresh string
		jwks            map[string]any
	}
	schools := map[string]*before{}
	for _, origin := range gw.origins {
		tok := tokenFor(t, origin, "member-app", redirect, "openid account:read", "student@demo.school", "student")
		_, _, jwks := get(t, origin+"/.well-known/jwks.json")
		schools[origin] = &before{access: tok.AccessToken, refresh: tok.RefreshToken, jwks: jsonOf(t, jwks)}
	}
	gw.kill()

	regDir := filepath.Join(dir, "registry")
	out, err := exec.Command(caddyBin, "schoolgate", "schools", "import", gw.config, "--registry", "dir", regDir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "2 imported") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	platformDir := filepath.Join(dir, "platform")
	if err := os.MkdirAll(platformDir, 0o700); err != nil {
		t.Fatal(err)
	}
	admin := startPlatform(t, platformDir, "",
		fmt.Sprintf("http://:%d, http://:%d {\n\tschool_platform {\n\t\tregistry dir %s\n\t}\n}\n", portA, portB, regDir))
	for _, origin := range gw.origins {
		waitHTTP(t, origin+"/.well-known/oauth-authorization-server")
	}

	for origin, b := range schools {
		if r := call(t, "POST", origin+"/account/graphql", b.access, viewerQuery, nil); r.status != 200 ||
			!strings.Contains(string(r.body), "student@demo.school") {
			t.Errorf("%s: the access token issued before the move: %d %s", origin, r.status, r.body)
		}
		_, _, jwks := get(t, origin+"/.well-known/jwks.json")
		if got := jsonOf(t, jwks); !reflect.DeepEqual(got, b.jwks) {
			t.Errorf("%s: the JWKS changed: %v, before %v", origin, got, b.jwks)
		}
		r := postForm(t, origin+"/api/oauth/token", url.Values{"grant_type": {"refresh_token"},
			"refresh_token": {b.refresh}, "client_id": {"member-app"}})
		pair := jsonOf(t, r.body)
		if r.status != 200 || pair["refresh_token"] == nil || pair["refresh_token"] == b.refresh {
			t.Fatalf("%s: the refresh token issued before the move: %d %s", origin, r.status, r.body)
		}
		if r := call(t, "POST", origin+"/account/graphql", pair["access_token"].(string), viewerQuery, nil); r.status != 200 {
			t.Errorf("%s: the access token of the refresh: %d %s", origin, r.status, r.body)
		}
	}

	// A third school through the commands: served from the first request
	// after the command, without a reload.
	third := fmt.Sprintf("http://c.test:%d", portA)
	c := platformClient(fmt.Sprintf("127.0.0.1:%d", portA))
	schoolsCmd := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(caddyBin, append([]string{"schoolgate", "schools"}, append(args, "--address", admin)...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("schools %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	begin := time.Now()
	schoolsCmd("add", third, "--upstream", sch.URL)
	returned := time.Now()
	within(t, "the school added to serve", time.Second, func() bool {
		r, err := tryFetch(c, third+"/.well-known/oauth-authorization-server")
		return err == nil && r.status == 200 && jsonOf(t, r.body)["issuer"] == third
	})
	t.Logf("a school added through the admin API served %v after the command returned (the command took %v)",
		time.Since(returned).Round(time.Millisecond), returned.Sub(begin).Round(time.Millisecond))
	if list := schoolsCmd("list"); !strings.Contains(list, third) || strings.Count(list, "\n") != 4 {
		t.Errorf("list:\n%s", list)
	}
	// One option changed, the others kept; a refusal in plain words,
	// exiting 1.
	schoolsCmd("set", third, "--option", "code_ttl=2m")
	if shown := schoolsCmd("show", third); !strings.Contains(shown, `"code_ttl": "2m"`) || !strings.Contains(shown, `"upstream": "`+sch.URL+`"`) {
		t.Errorf("show after set --option:\n%s", shown)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"add", third, "--upstream", sch.URL}, "Error: " + third + " is in the registry already (version 2): change it with caddy schoolgate schools set"},
		{[]string{"set", third, "--option", "code_ttl=soon"}, `Error: config: code_ttl: time: invalid duration "soon" (HTTP 400)`},
	} {
		cmd := exec.Command(caddyBin, append([]string{"schoolgate", "schools"}, append(tt.args, "--address", admin)...)...)
		out, err := cmd.CombinedOutput()
		if err == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), tt.want) || strings.Contains(string(out), `{"error"`) {
			t.Errorf("schools %v: %v\n%s, want exit 1 and %q", tt.args, err, out, tt.want)
		}
	}
	schoolsCmd("remove", third)
	within(t, "the school removed to answer 404", time.Second, func() bool {
		r, err := tryFetch(c, third+"/.well-known/oauth-authorization-server")
		return err == nil && r.status == 404
	})
	out, err = exec.Command(caddyBin, "schoolgate", "schools", "show", third, "--address", admin).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Error: no school with issuer "+third+" in the registry dir") ||
		!strings.Contains(string(out), "(HTTP 404)") || strings.Contains(string(out), `{"error"`) {
		t.Errorf("show of the school removed: %v\n%s", err, out)
	}
}

// within polls cond for up to limit: the registry's promised delay.
func within(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s took more than %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
