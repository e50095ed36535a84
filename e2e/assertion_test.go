package e2e

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/schoolgate/schoolgate/schooltest"
)

// startVerifyingSchool runs a demo school that verifies the identity
// assertion of the gateway at origin, as scripts/demo.sh starts it.
func startVerifyingSchool(t *testing.T, origin string) *school {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s := &school{URL: "http://" + addr}
	start(t, schoolBin, "-listen", addr, "-assertion-issuer", origin,
		"-assertion-jwks", origin+"/.well-known/jwks.json", "-assertion-audience", s.URL)
	waitHTTP(t, s.URL+"/healthz")
	return s
}

// forgedAssertion is what someone who reaches the legacy server directly
// can make: the right claims and the gateway's published kid, signed with
// a key of their own.
func forgedAssertion(t *testing.T, origin, audience, kid string) string {
	now := time.Now()
	return schooltest.SignJWS(t, schooltest.ES256Key(t, kid), "school-assertion+jwt", map[string]any{
		"iss": origin, "aud": audience, "sub": "member-1",
		"email": "student@demo.school", "roles": []string{"student"}, "scope": "openid account:read",
		"client_id": "member-app", "token_audience": "member", "iat": now.Unix(), "exp": now.Add(time.Minute).Unix()})
}

// TestIdentityAssertion: with identity_assertion on and the demo school
// verifying it, tokens reach the Account API, the admin API and the MCP
// member tools through the gateway, while a request sent straight to the
// school with forged identity headers is refused without the gateway's
// signature, whatever it carries instead.
func TestIdentityAssertion(t *testing.T) {
	port := freePort(t)
	origin := fmt.Sprintf("http://127.0.0.1:%d", port)
	sch := startVerifyingSchool(t, origin)
	dir := t.TempDir()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	clients := vendorBlock("Member App", "member-app", redirect, "member", "openid profile email account:read") +
		vendorBlock("Ops Tool", "ops-tool", redirect, "operator", "openid courses:read")
	gw := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "a"), clients+"\t\tidentity_assertion on\n"))

	member := tokenFor(t, gw.URL, "member-app", redirect, "openid profile email account:read", "student@demo.school", "student")
	operator := tokenFor(t, gw.URL, "ops-tool", redirect, "openid courses:read", "owner@demo.school", "owner")

	// Through the gateway; a client's own assertion is replaced.
	r := call(t, "POST", gw.URL+"/account/graphql", member.AccessToken, viewerQuery,
		map[string]string{"X-School-Assertion": "forged", "X-School-Subject": "operator-1"})
	if r.status != 200 || !strings.Contains(string(r.body), "student@demo.school") {
		t.Fatalf("member through the gateway: %d %s", r.status, r.body)
	}
	assertion := lastUpstreamRequest(t, sch.URL).Get("X-School-Assertion")
	msg, err := jws.ParseString(assertion, jws.WithCompact())
	if err != nil {
		t.Fatalf("forwarded assertion %q: %v", assertion, err)
	}
	kid, _ := msg.Signatures()[0].ProtectedHeaders().KeyID()
	if typ, _ := msg.Signatures()[0].ProtectedHeaders().Type(); typ != "school-assertion+jwt" || !slices.Contains(kids(t, gw.URL), kid) {
		t.Errorf("assertion typ %q kid %q; published kids %v", typ, kid, kids(t, gw.URL))
	}
	if r := call(t, "GET", gw.URL+"/admin/api/courses", operator.AccessToken, "", nil); r.status != 200 {
		t.Errorf("operator through the gateway: %d %s", r.status, r.body)
	}
	if out := callToolWith(t, gw.URL+"/mcp", member.AccessToken, "my_enrollments", nil); strings.HasPrefix(out, "ERROR") {
		t.Errorf("my_enrollments (the gateway's own Account API call): %s", out)
	}

	// Straight to the school, as anyone on its network could.
	idToken, _ := member.Extra("id_token").(string)
	if idToken == "" {
		t.Fatal("no ID token")
	}
	forged := map[string]string{"X-School-Subject": "member-1", "X-School-Email": "student@demo.school",
		"X-School-Audience": "member", "X-School-Scopes": "openid account:read", "X-School-Roles": "student"}
	for name, a := range map[string]string{
		"no assertion":                      "",
		"assertion signed with its own key": forgedAssertion(t, origin, sch.URL, kid),
		"the member's ID token":             idToken, // same keys, but typ JWT and aud the client
	} {
		hdr := maps.Clone(forged)
		if a != "" {
			hdr["X-School-Assertion"] = a
		}
		r := call(t, "POST", sch.URL+"/account/graphql", "", viewerQuery, hdr)
		if r.status != 401 || jsonOf(t, r.body)["error"] != "invalid_assertion" {
			t.Errorf("%s, straight to the school: %d %s", name, r.status, r.body)
		}
	}
	operatorHdr := map[string]string{"X-School-Subject": "operator-1", "X-School-Audience": "operator", "X-School-Roles": "owner"}
	if r := call(t, "GET", sch.URL+"/admin/api/students", "", "", operatorHdr); r.status != 401 {
		t.Errorf("admin API straight to the school with forged headers: %d %s", r.status, r.body)
	}
}

// TestIdentityHeadersAssertion: with identity_headers assertion, what a
// real Caddy forwards carries the assertion and no other X-School-*
// header, client-sent ones included, and the demo school, which reads
// the identity from the assertion, answers the member and the MCP tools.
func TestIdentityHeadersAssertion(t *testing.T) {
	port := freePort(t)
	origin := fmt.Sprintf("http://127.0.0.1:%d", port)
	sch := startVerifyingSchool(t, origin)
	dir := t.TempDir()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	clients := vendorBlock("Member App", "member-app", redirect, "member", "openid profile email account:read")
	gw := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "a"),
		clients+"\t\tidentity_assertion on\n\t\tidentity_headers assertion\n"))
	member := tokenFor(t, gw.URL, "member-app", redirect, "openid profile email account:read", "student@demo.school", "student")

	r := call(t, "POST", gw.URL+"/account/graphql", member.AccessToken, viewerQuery,
		map[string]string{"X-School-Assertion": "forged", "X-School-Subject": "operator-1", "X-School-Audience": "operator"})
	if r.status != 200 || !strings.Contains(string(r.body), "student@demo.school") {
		t.Fatalf("member through the gateway: %d %s", r.status, r.body)
	}
	var school []string
	for name := range lastUpstreamRequest(t, sch.URL) {
		if strings.HasPrefix(strings.ToLower(name), "x-school-") {
			school = append(school, name)
		}
	}
	if len(school) != 1 || school[0] != "X-School-Assertion" {
		t.Errorf("forwarded X-School-* headers %q, want X-School-Assertion alone", school)
	}
	if out := callToolWith(t, gw.URL+"/mcp", member.AccessToken, "my_enrollments", nil); strings.HasPrefix(out, "ERROR") {
		t.Errorf("my_enrollments (the gateway's own Account API call): %s", out)
	}
}
