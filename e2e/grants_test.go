package e2e

import (
	"encoding/json"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

// TestGrantsCommand: `caddy schoolgate grants` lists who connected what at
// a running Caddy, and `revoke-grant` ends one grant: its access token is
// refused at the next request, its refresh token gets invalid_grant, and
// the disconnect is counted as the operator's. Then the person authorizes
// the application twice (two devices): the overview counts one person,
// and `revoke-grant --client-id` ends both grants.
func TestGrantsCommand(t *testing.T) {
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	gw := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "site"), ""))
	run := func(args ...string) (string, error) {
		t.Helper()
		args = append([]string{"schoolgate"}, args...)
		args = append(args, "--address", gw.AdminAddr, "--issuer", gw.URL)
		out, err := exec.Command(caddyBin, args...).CombinedOutput()
		return string(out), err
	}
	decode := func(out string, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("no JSON: %s", out)
		}
	}
	clientID := registerLoopback(t, gw.URL)
	tok := tokenFor(t, gw.URL, clientID, "http://127.0.0.1:7777/callback", "courses:read",
		"owner@demo.school", "owner")

	out, err := run("grants")
	var counts struct {
		Clients []struct {
			ClientID string `json:"client_id"`
			Kind     string `json:"kind"`
			People   int    `json:"people"`
			Grants   int    `json:"grants"`
		} `json:"clients"`
	}
	decode(out, &counts)
	if err != nil || len(counts.Clients) != 1 || counts.Clients[0].ClientID != clientID ||
		counts.Clients[0].Kind != "loopback" || counts.Clients[0].People != 1 || counts.Clients[0].Grants != 1 {
		t.Fatalf("grants: %v %s", err, out)
	}
	out, err = run("grants", "--client-id", clientID, "--limit", "10")
	var page struct {
		Grants []struct {
			GrantID string   `json:"grant_id"`
			Sub     string   `json:"sub"`
			Email   string   `json:"email"`
			Scopes  []string `json:"scopes"`
		} `json:"grants"`
	}
	decode(out, &page)
	if err != nil || len(page.Grants) != 1 || page.Grants[0].Sub != "operator-1" || page.Grants[0].Email != "owner@demo.school" {
		t.Fatalf("grants --client-id: %v %s", err, out)
	}
	grantID := page.Grants[0].GrantID
	if out, err := run("grants", "--subject", "operator-1"); err != nil || !strings.Contains(out, grantID) {
		t.Errorf("grants --subject: %v %s", err, out)
	}
	if out, err := run("revoke-grant", grantID); err == nil || !strings.Contains(out, "--subject") {
		t.Errorf("revoke-grant without --subject: %v %s", err, out)
	}
	if out, err := run("revoke-grant", grantID, "--subject", "member-1"); err == nil || !strings.Contains(out, "no such grant") {
		t.Errorf("revoke-grant of another person: %v %s", err, out)
	}
	if r := call(t, "GET", gw.URL+"/admin/api/courses", tok.AccessToken, "", nil); r.status != 200 {
		t.Fatalf("a refused revocation ended the grant: %d", r.status)
	}
	out, err = run("revoke-grant", grantID, "--subject", "operator-1")
	if err != nil || !strings.Contains(out, `"revoked":true`) {
		t.Fatalf("revoke-grant: %v %s", err, out)
	}
	if r := call(t, "GET", gw.URL+"/admin/api/courses", tok.AccessToken, "", nil); r.status != 401 {
		t.Errorf("the revoked grant's access token: %d", r.status)
	}
	r := postForm(t, gw.URL+"/api/oauth/token", url.Values{"grant_type": {"refresh_token"},
		"refresh_token": {tok.RefreshToken}, "client_id": {clientID}})
	if r.status != 400 || !strings.Contains(string(r.body), "invalid_grant") {
		t.Errorf("the revoked grant's refresh token: %d %s", r.status, r.body)
	}
	if out, err := run("grants"); err != nil || !strings.Contains(out, `"clients":[]`) {
		t.Errorf("grants after the revocation: %v %s", err, out)
	}

	// Two devices: one person, two grants, both ended by one revocation.
	var devices []*oauth2.Token
	for range 2 {
		devices = append(devices, tokenFor(t, gw.URL, clientID, "http://127.0.0.1:7777/callback", "courses:read",
			"owner@demo.school", "owner"))
	}
	out, err = run("grants")
	decode(out, &counts)
	if err != nil || len(counts.Clients) != 1 || counts.Clients[0].People != 1 || counts.Clients[0].Grants != 2 {
		t.Fatalf("grants with two devices: %v %s", err, out)
	}
	if out, err := run("revoke-grant", grantID, "--client-id", clientID, "--subject", "operator-1"); err == nil || !strings.Contains(out, "not both") {
		t.Errorf("revoke-grant of a grant and an application: %v %s", err, out)
	}
	if out, err := run("revoke-grant", "--client-id", clientID, "--subject", "member-1"); err == nil || !strings.Contains(out, "no grant of this application") {
		t.Errorf("revoke-grant --client-id of a person not connected: %v %s", err, out)
	}
	for i, d := range devices {
		if r := call(t, "GET", gw.URL+"/admin/api/courses", d.AccessToken, "", nil); r.status != 200 {
			t.Fatalf("device %d before the revocation: %d", i+1, r.status)
		}
	}
	out, err = run("revoke-grant", "--client-id", clientID, "--subject", "operator-1")
	if err != nil || !strings.Contains(out, `"revoked":true`) || !strings.Contains(out, `"grants_ended":2`) {
		t.Fatalf("revoke-grant --client-id: %v %s", err, out)
	}
	for i, d := range devices {
		if r := call(t, "GET", gw.URL+"/admin/api/courses", d.AccessToken, "", nil); r.status != 401 {
			t.Errorf("device %d's access token after the revocation: %d", i+1, r.status)
		}
		r := postForm(t, gw.URL+"/api/oauth/token", url.Values{"grant_type": {"refresh_token"},
			"refresh_token": {d.RefreshToken}, "client_id": {clientID}})
		if r.status != 400 || !strings.Contains(string(r.body), "invalid_grant") {
			t.Errorf("device %d's refresh token after the revocation: %d %s", i+1, r.status, r.body)
		}
	}
	if out, err := run("grants"); err != nil || !strings.Contains(out, `"clients":[]`) {
		t.Errorf("grants after the second revocation: %v %s", err, out)
	}
	_, _, raw := get(t, "http://"+gw.AdminAddr+"/metrics")
	series := `schoolgate_school_grants_disconnected_total{by="operator",site="` + gw.URL + `"}`
	if got := metricValue(t, string(raw), series); got != 3 {
		t.Errorf("%s = %v, want 3 (one grant, then two)", series, got)
	}
}
