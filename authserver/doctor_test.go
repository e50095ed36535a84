package authserver

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// lastRefusal is the latest refused row of the client, or nil.
func lastRefusal(t *testing.T, f *fixture, clientID string) *store.Step {
	t.Helper()
	rows, err := f.srv.ClientSteps(context.Background(), clientID)
	if err != nil {
		t.Fatal(err)
	}
	var last *store.Step
	for i := range rows {
		if rows[i].Refused() && (last == nil || !rows[i].Last.Before(last.Last)) {
			last = &rows[i]
		}
	}
	return last
}

// TestDoctorNamesEachRefusal makes a client fail each way and checks the
// step, reason and error the doctor keeps, and that no secret of the
// attempt is kept.
func TestDoctorNamesEachRefusal(t *testing.T) {
	cases := []struct {
		name                string
		fail                func(f *fixture) (secrets []string)
		step, reason, error string
		subject             string
	}{
		{"redirect differs by a slash", func(f *fixture) []string {
			_, c := pkce()
			q := authParams(c)
			q.Set("redirect_uri", memberRedirect+"/")
			f.authorize(q, "student")
			return nil
		}, StepAuthorize, ReasonRedirectUnknown, "invalid_request", ""},
		{"scope not given", func(f *fixture) []string {
			_, c := pkce()
			q := authParams(c)
			q.Set("scope", "openid admin:write")
			f.authorize(q, "student")
			return nil
		}, StepAuthorize, ReasonScopeUnknown, "invalid_scope", ""},
		{"resource of the wrong origin", func(f *fixture) []string {
			_, c := pkce()
			q := authParams(c)
			q.Set("resource", "https://other.example")
			f.authorize(q, "student")
			return nil
		}, StepAuthorize, ReasonResourceWrong, "invalid_target", ""},
		{"consent denied", func(f *fixture) []string {
			_, c := pkce()
			f.consent(f.authorize(authParams(c), "student"), "student", "deny")
			return nil
		}, StepConsent, ReasonConsentDenied, "access_denied", "member-1"},
		{"verifier of another attempt", func(f *fixture) []string {
			v, c := pkce()
			code := f.code(authParams(c), v)
			other, _ := pkce()
			f.exchange(code, other)
			return []string{code, other, v}
		}, StepToken, ReasonVerifierMismatch, "invalid_grant", "member-1"},
		{"redirect differs at the exchange", func(f *fixture) []string {
			v, c := pkce()
			code := f.code(authParams(c), v)
			f.token(url.Values{"grant_type": {"authorization_code"}, "code": {code},
				"redirect_uri": {memberRedirect + "/"}, "client_id": {memberClient}, "code_verifier": {v},
				"resource": {issuer}})
			return []string{code, v}
		}, StepToken, ReasonRedirectMismatch, "invalid_grant", "member-1"},
		{"code replayed", func(f *fixture) []string {
			v, c := pkce()
			code := f.code(authParams(c), v)
			f.exchange(code, v)
			f.exchange(code, v)
			return []string{code, v}
		}, StepToken, ReasonCodeReplayed, "invalid_grant", ""},
		{"client authentication", func(f *fixture) []string {
			f.token(url.Values{"grant_type": {"authorization_code"}, "code": {"sgac_x"},
				"client_id": {confidential}, "client_secret": {"wrong-secret-value"}})
			return []string{"wrong-secret-value", portalSecret}
		}, StepToken, ReasonClientAuth, "invalid_client", ""},
		{"insufficient scope at use", func(f *fixture) []string {
			m := f.tokens()
			at := m["access_token"].(string)
			f.serve("GET", sitepath.UserInfo, nil, map[string]string{"Authorization": "Bearer " + at})
			// userinfo needs openid, which the token has; ask the guard
			// directly for a scope it lacks.
			r, _ := http.NewRequest("GET", issuer+"/x", nil)
			r.Header.Set("Authorization", "Bearer "+at)
			f.srv.Guard().Check(nil, r, requirementOf("courses:write"))
			return []string{at, m["refresh_token"].(string)}
		}, StepUse, ReasonScopeInsufficient, "insufficient_scope", "member-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			secrets := tc.fail(f)
			got := lastRefusal(t, f, client(tc.reason))
			if got == nil {
				t.Fatal("no refusal noted")
			}
			if got.Name != tc.step || got.Reason != tc.reason || got.Error != tc.error || got.Subject != tc.subject {
				t.Errorf("noted %s/%s/%s for %q, want %s/%s/%s for %q", got.Name, got.Reason, got.Error, got.Subject,
					tc.step, tc.reason, tc.error, tc.subject)
			}
			// Stored by the flush, the same answer; nothing secret in it.
			if err := f.srv.FlushSteps(context.Background()); err != nil {
				t.Fatal(err)
			}
			rows, err := f.store.QuerySteps(context.Background(), store.StepQuery{ClientID: client(tc.reason)})
			if err != nil || len(rows) == 0 {
				t.Fatalf("stored rows %v, %v", rows, err)
			}
			for _, row := range rows {
				all := strings.Join([]string{row.ClientID, row.Subject, row.Name, row.Reason, row.Error, row.Detail}, " ")
				for _, s := range secrets {
					if s != "" && strings.Contains(all, s) {
						t.Errorf("row %+v holds a secret of the attempt", row)
					}
				}
				if strings.Contains(all, "@") {
					t.Errorf("row %+v holds an e-mail", row)
				}
			}
		})
	}
}

// client is the client a case fails with.
func client(reason string) string {
	if reason == ReasonClientAuth {
		return confidential
	}
	return memberClient
}

func requirementOf(scopes ...string) policy.Requirement { return policy.Requirement{Scopes: scopes} }

// TestDoctorFloodIsCounted: a flood of attempts ending alike is one row
// counted, and made-up client ids past the bound are dropped, not kept.
func TestDoctorFloodIsCounted(t *testing.T) {
	f := newFixtureWith(t, func(c *Config) { c.RateLimits = &RateLimitOptions{Off: true} })
	for range 10000 {
		f.token(url.Values{"grant_type": {"authorization_code"}, "code": {"sgac_made_up"},
			"client_id": {memberClient}, "code_verifier": {strings.Repeat("v", 43)}, "redirect_uri": {memberRedirect}})
	}
	rows, err := f.srv.ClientSteps(context.Background(), memberClient)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, r := range rows {
		total += r.Count
	}
	if len(rows) != 1 || total != 10000 {
		t.Fatalf("flood noted as %+v, want 1 row counting 10000", rows)
	}
	for i := range 2 * maxPendingSteps {
		f.srv.noteStep(StepToken, "made-up-"+strconv.Itoa(i), "", ReasonUnknownClient, "invalid_client", "")
	}
	pending, dropped := f.srv.steps.drain()
	if len(pending) != maxPendingSteps || dropped != maxPendingSteps+1 {
		t.Errorf("pending %d rows, dropped %d; want %d and %d", len(pending), dropped, maxPendingSteps, maxPendingSteps+1)
	}
}

// Every reason and step is worded (i18n's own test holds every language
// to English's keys).
func TestDoctorWordsEveryReason(t *testing.T) {
	for _, r := range Reasons {
		if ReasonText("de", r) == r {
			t.Errorf("reason %s has no words", r)
		}
	}
	for _, s := range Steps {
		if StepText("fr", s) == s {
			t.Errorf("step %s has no words", s)
		}
	}
}

// An attempt refused at one instance of a school is in the doctor of
// another on the same store once the first has flushed; before, only
// the first shows it (its own pending rows).
func TestDoctorAcrossInstances(t *testing.T) {
	var cfg *Config
	a := newFixtureWith(t, func(c *Config) { cfg = c })
	b, err := New(context.Background(), *cfg, a.store)
	if err != nil {
		t.Fatal(err)
	}
	v, c := pkce()
	code := a.code(authParams(c), v)
	other, _ := pkce()
	a.exchange(code, other)
	stopped := func(s *Server) string {
		rep, err := s.Doctor(context.Background(), memberClient, "en")
		if err != nil {
			t.Fatal(err)
		}
		if rep.Stopped == nil {
			return ""
		}
		return rep.Stopped.Reason
	}
	if got := stopped(a.srv); got != ReasonVerifierMismatch {
		t.Errorf("the instance that refused: %q", got)
	}
	if got := stopped(b); got != "" {
		t.Errorf("another instance before the flush: %q", got)
	}
	if err := a.srv.FlushSteps(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := stopped(b); got != ReasonVerifierMismatch {
		t.Errorf("another instance after the flush: %q", got)
	}
}

// TestDoctorNotesEveryRegistration: a registration that finds its client
// (a configured integration by its name, an identical loopback one
// repeated) went through the register step as much as one that creates
// it, and the doctor says so.
func TestDoctorNotesEveryRegistration(t *testing.T) {
	const loopback = `{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/callback"]}`
	cases := []struct {
		name string
		body []string
		want func(m map[string]any) string // the client_id to look up
	}{
		{"a configured integration by its name", []string{`{"client_name":"Member App","redirect_uris":["` + memberRedirect + `"]}`},
			func(map[string]any) string { return memberClient }},
		{"a new loopback client", []string{loopback}, nil},
		{"an identical loopback registration repeated", []string{loopback, loopback}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			var m map[string]any
			for _, b := range tc.body {
				var code int
				if code, m = f.register("application/json", b); code != http.StatusCreated {
					t.Fatalf("registration answered %d: %v", code, m)
				}
			}
			id, _ := m["client_id"].(string)
			if tc.want != nil {
				id = tc.want(m)
			}
			rows, err := f.srv.ClientSteps(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			for _, r := range rows {
				if r.Name == StepRegister && !r.Refused() {
					n += r.Count
				}
			}
			if n != int64(len(tc.body)) {
				t.Errorf("register passed %d times for %s, want %d: %+v", n, id, len(tc.body), rows)
			}
		})
	}
}

// fullStore is a store whose client limit is reached.
type fullStore struct{ store.Store }

func (fullStore) CreateClient(context.Context, *store.Client, int) (*store.Client, bool, error) {
	return nil, false, store.ErrClientLimit
}

// TestDoctorNotesMetadataLimit: a metadata-document client refused
// because the school has reached its limit of them is told apart from
// the other refusals of its document.
func TestDoctorNotesMetadataLimit(t *testing.T) {
	f := newFixture(t)
	d := newDocServer(t)
	d.docs["/client.json"] = `{"client_id":"%s","redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"none"}`
	f.useMetadata(d, MetadataDocumentsConfig{AllowPrivateNetworks: true})
	f.srv.store = fullStore{f.srv.store}
	id := d.URL + "/client.json"
	if rec := f.authorize(metadataAuthParams(id, "http://127.0.0.1:5000/cb", "openid"), "student"); rec.Code != http.StatusBadRequest {
		t.Fatalf("authorize over the limit: %d %s", rec.Code, rec.Body)
	}
	got := lastRefusal(t, f, id)
	if got == nil || got.Name != StepMetadata || got.Reason != ReasonMetadataLimit || got.Error != "invalid_client_metadata" {
		t.Fatalf("noted %+v, want metadata/%s", got, ReasonMetadataLimit)
	}
}
