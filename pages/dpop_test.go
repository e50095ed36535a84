package pages

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// tokenAnswer posts a token request without a DPoP proof and returns the
// answer's JSON.
func tokenAnswer(t *testing.T, f *fixture, form url.Values) map[string]any {
	t.Helper()
	_, m := f.token(form)
	return m
}

// The admin area's application form sets and clears the application's
// DPoP requirement, and the token endpoint applies it.
func TestAdminDPoPOverride(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	form := appForm("Bound", "public", "openid")
	form.Set("dpop_bound", "on")
	rec := f.createApp(form)
	idm := reClientID.FindStringSubmatch(rec.Body.String())
	if rec.Code != http.StatusOK || idm == nil {
		t.Fatalf("create: %d\n%s", rec.Code, rec.Body)
	}
	id := idm[1]
	stored := func() bool {
		c, err := f.store.GetClient(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return c.DPoPBound
	}
	if !stored() {
		t.Fatal("the form's DPoP requirement was not stored")
	}
	if page := f.adminGet(adminPathEdit+"?client_id="+id, "owner").Body.String(); !strings.Contains(page, `id="dpop-bound" name="dpop_bound" value="on" checked`) {
		t.Errorf("the edit form does not show the requirement:\n%s", page)
	}
	v, c := pkce()
	q := appAuthParams(id, c, "openid")
	code := redirectParams(t, f.consent(f.authorize(q, "student"), "student", "approve"), appRedirect).Get("code")
	tokenForm := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {appRedirect},
		"client_id": {id}, "code_verifier": {v}, "resource": {issuer}}
	if m := tokenAnswer(t, f, tokenForm); m["error"] != "invalid_dpop_proof" {
		t.Errorf("a bearer token request of the bound application: %v", m)
	}
	edit := url.Values{"client_id": {id}, "name": {"Bound"}, "redirect_uris": {appRedirect}, "scope": {"openid"},
		"csrf_token": {f.adminCSRF()}}
	if rec := f.adminPost(adminPathEdit, "owner", edit, nil); rec.Code != http.StatusSeeOther || stored() {
		t.Errorf("clearing the requirement: %d, stored %v", rec.Code, stored())
	}
	if m := tokenAnswer(t, f, tokenForm); m["token_type"] != "Bearer" {
		t.Errorf("after clearing: %v", m)
	}
}
