package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// doctorReport is what the admin API's /schoolgate/doctor answers.
type doctorReport struct {
	ClientID string       `json:"client_id"`
	Known    bool         `json:"known"`
	Steps    []doctorStep `json:"steps"`
	Stopped  *doctorStep  `json:"stopped"`
}

type doctorStep struct {
	Sub     string `json:"sub"`
	Step    string `json:"step"`
	Reason  string `json:"reason"`
	Error   string `json:"error"`
	Detail  string `json:"detail"`
	Count   int64  `json:"count"`
	Outcome string `json:"outcome"`
	Why     string `json:"why"`
}

// passed reports whether the report has step among those that went
// through.
func (r *doctorReport) passed(step string) bool {
	return slices.ContainsFunc(r.Steps, func(s doctorStep) bool { return s.Step == step && s.Outcome == "passed" })
}

// doctorAt asks gw's admin API for the doctor's report of clientID at
// the school of issuer.
func doctorAt(t *testing.T, gw *gateway, issuer, clientID string) doctorReport {
	t.Helper()
	status, _, body := get(t, "http://"+gw.AdminAddr+"/schoolgate/doctor?issuer="+url.QueryEscape(issuer)+
		"&client_id="+url.QueryEscape(clientID))
	if status != http.StatusOK {
		t.Fatalf("doctor at %s: %d %s", gw.AdminAddr, status, body)
	}
	var r doctorReport
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("doctor at %s: %v: %s", gw.AdminAddr, err, body)
	}
	return r
}

// awaitDoctor polls gw's doctor until cond holds of its report, for up
// to 15 s: the other instance adds what it noted to the shared store
// every 5 s.
func awaitDoctor(t *testing.T, gw *gateway, issuer, clientID, what string, cond func(*doctorReport) bool) doctorReport {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := doctorAt(t, gw, issuer, clientID)
		if cond(&r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("the doctor at %s does not show %s within 15 s: %+v", gw.AdminAddr, what, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestScaleOutDoctor: an attempt that goes through one instance and
// fails at the other is followed across both on PostgreSQL. The code is
// issued at A and redeemed at B with another attempt's verifier; the
// doctor at A names B's refusal once B has flushed, and the doctor at B
// the steps A passed. Then a refresh token rotated at B is presented
// again at A: the doctor at B names A's reuse.
func TestScaleOutDoctor(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three Caddy processes and PostgreSQL")
	}
	s := startScaleOut(t, "\t\trefresh_grace 0\n")
	ctx := t.Context()
	issuer, client := s.lb.URL, s.o.clientID

	code, _, r := s.o.at(s.addrA).authorize(ctx)
	if code == "" {
		t.Fatalf("authorize at A: %v", r)
	}
	other := oauth2.GenerateVerifier() // another attempt's
	if r := s.o.at(s.addrB).exchange(ctx, code, other); r.status != http.StatusBadRequest || r.oauthErr() != "invalid_grant" {
		t.Fatalf("the code with another attempt's verifier at B: %v", r)
	}
	rep := awaitDoctor(t, s.a, issuer, client, "B's token refusal", func(r *doctorReport) bool {
		return r.Stopped != nil && r.Stopped.Step == "token" && r.Stopped.Reason == "verifier_mismatch"
	})
	if st := rep.Stopped; st.Error != "invalid_grant" || st.Sub != "member-1" || st.Why == "" {
		t.Errorf("the refusal at A's doctor: %+v", st)
	}
	for _, step := range []string{"authorize", "signin", "code"} {
		if !rep.passed(step) {
			t.Errorf("A's doctor lacks its own %s passed: %+v", step, rep.Steps)
		}
	}
	rep = awaitDoctor(t, s.b, issuer, client, "A's steps", func(r *doctorReport) bool { return r.passed("code") })
	if rep.Stopped == nil || rep.Stopped.Reason != "verifier_mismatch" {
		t.Errorf("B's doctor names %+v, want its own verifier_mismatch", rep.Stopped)
	}

	p := s.grant(t, s.addrA, s.addrA)
	if _, ok := s.o.at(s.addrB).refresh(ctx, p.Refresh).pair(); !ok {
		t.Fatal("refresh at B failed")
	}
	if r := s.o.at(s.addrA).refresh(ctx, p.Refresh); r.status != http.StatusBadRequest || r.oauthErr() != "invalid_grant" {
		t.Fatalf("the rotated refresh token again at A: %v", r)
	}
	rep = awaitDoctor(t, s.b, issuer, client, "A's refresh reuse", func(r *doctorReport) bool {
		return r.Stopped != nil && r.Stopped.Step == "refresh" && r.Stopped.Reason == "refresh_reuse"
	})
	if !rep.passed("refresh") || !rep.Known {
		t.Errorf("B's doctor: %+v", rep)
	}
}
