package authserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/schooltest"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// events returns the stored events of type typ, newest first.
func (f *fixture) events(typ string) []store.AuditEvent { return schooltest.Events(f.t, f.store, typ) }

// oneEvent returns the one stored event of type typ, failing otherwise.
func (f *fixture) oneEvent(typ string) store.AuditEvent {
	return schooltest.OneEvent(f.t, f.store, typ)
}

// auditLog makes the server's audit log a buffer the test reads.
func (f *fixture) auditLog() *schooltest.Buffer {
	b := &schooltest.Buffer{}
	f.srv.cfg.AuditLogger = slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return b
}

// The test client's address as httptest sets it.
const testClientIP = "192.0.2.1"

func TestAuditConsentAndCode(t *testing.T) {
	f := newFixture(t)
	log := f.auditLog()
	v, c := pkce()
	f.code(authParams(c), v)
	for _, typ := range []string{store.EventConsentGranted, store.EventCodeIssued} {
		e := f.oneEvent(typ)
		if e.Subject != "member-1" || e.ClientID != memberClient || e.Actor != store.ActorMember ||
			e.ClientIP != testClientIP || !strings.Contains(e.Detail, "account:read") {
			t.Errorf("%s: %+v", typ, e)
		}
		if n := strings.Count(log.String(), "event="+typ); n != 1 {
			t.Errorf("%s logged %d times:\n%s", typ, n, log)
		}
	}
	// A remembered consent issues the next code without asking: a code
	// event, no consent event.
	f.code(authParams(c), v)
	if n := len(f.events(store.EventConsentGranted)); n != 1 {
		t.Errorf("%d consent events after a remembered consent, want 1", n)
	}
	if n := len(f.events(store.EventCodeIssued)); n != 2 {
		t.Errorf("%d code events after two codes, want 2", n)
	}
}

func TestAuditConsentDenied(t *testing.T) {
	f := newFixture(t)
	_, c := pkce()
	rec := f.consent(f.authorize(authParams(c), "student"), "student", "deny")
	if p := redirectParams(t, rec, memberRedirect); p.Get("error") != "access_denied" {
		t.Fatalf("deny: %v", p)
	}
	e := f.oneEvent(store.EventConsentDenied)
	if e.Subject != "member-1" || e.ClientID != memberClient || e.Outcome != "denied" || e.ClientIP != testClientIP {
		t.Errorf("%+v", e)
	}
	if n := len(f.events(store.EventConsentGranted)) + len(f.events(store.EventCodeIssued)); n != 0 {
		t.Errorf("a denial stored %d consent or code events", n)
	}
}

func TestAuditCodeRedeemedAndReplayed(t *testing.T) {
	f := newFixture(t)
	v, c := pkce()
	code := f.code(authParams(c), v)
	if status, m := f.exchange(code, v); status != 200 {
		t.Fatalf("exchange: %d %v", status, m)
	}
	e := f.oneEvent(store.EventCodeRedeemed)
	if e.Subject != "member-1" || e.ClientID != memberClient || e.Target == "" || e.ClientIP != testClientIP {
		t.Errorf("redeemed: %+v", e)
	}
	if status, _ := f.exchange(code, v); status != 400 {
		t.Fatalf("replay answered %d", status)
	}
	r := f.oneEvent(store.EventCodeReplay)
	if r.Target != e.Target || r.Grants != 1 || r.Outcome != "grant revoked" {
		t.Errorf("replay: %+v, want the grant %s revoked", r, e.Target)
	}
}

func TestAuditRefreshAndReuse(t *testing.T) {
	f := newFixture(t)
	rt1 := f.tokens()["refresh_token"].(string)
	if status, m := f.token(refreshForm(rt1)); status != 200 {
		t.Fatalf("refresh: %d %v", status, m)
	}
	e := f.oneEvent(store.EventTokenRefreshed)
	if e.Subject != "member-1" || e.ClientID != memberClient || e.Target == "" || e.Actor != store.ActorClient {
		t.Errorf("refreshed: %+v", e)
	}
	f.clock.Advance(time.Minute)
	if status, _ := f.token(refreshForm(rt1)); status != 400 {
		t.Fatalf("reuse answered %d", status)
	}
	r := f.oneEvent(store.EventRefreshReuse)
	if r.Target != e.Target || r.Grants != 1 {
		t.Errorf("reuse: %+v", r)
	}
}

func TestAuditTokenRevokedByClient(t *testing.T) {
	f := newFixture(t)
	tok := f.tokens()
	form := url.Values{"token": {tok["refresh_token"].(string)}, "client_id": {memberClient}}
	rec := f.serve("POST", sitepath.Revoke, strings.NewReader(form.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if rec.Code != 200 {
		t.Fatalf("revoke: %d", rec.Code)
	}
	e := f.oneEvent(store.EventTokenRevoked)
	redeemed := f.oneEvent(store.EventCodeRedeemed)
	if e.Subject != "member-1" || e.ClientID != memberClient || e.Target != redeemed.Target ||
		e.Outcome != "grant revoked" || strings.Contains(e.Detail, tok["refresh_token"].(string)) {
		t.Errorf("%+v", e)
	}
}

func TestAuditClientRegistered(t *testing.T) {
	f := newFixture(t)
	status, m := f.register("application/json", `{"client_name":"cli","redirect_uris":["http://127.0.0.1:1/cb"]}`)
	if status != 201 {
		t.Fatalf("register: %d %v", status, m)
	}
	e := f.oneEvent(store.EventClientCreated)
	if e.ClientID != m["client_id"] || e.Detail != store.KindLoopback || e.ClientIP != testClientIP {
		t.Errorf("%+v", e)
	}
	// The same registration again returns the same client: no event.
	if status, _ := f.register("application/json", `{"client_name":"cli","redirect_uris":["http://127.0.0.1:1/cb"]}`); status != 201 {
		t.Fatalf("register again: %d", status)
	}
	f.oneEvent(store.EventClientCreated)
}

func TestAuditKeyRotated(t *testing.T) {
	f := newFixture(t)
	kid, _, err := f.srv.RotateKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if e := f.oneEvent(store.EventKeyRotated); e.Target != kid {
		t.Errorf("%+v, want the key %s", e, kid)
	}
}

func TestAuditMCPConnectionsSwitched(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	id, _ := f.newApp("Planner", "public", "openid")
	f.grantTo(id, "student", "openid")
	if err := f.srv.SetMCPConnections(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	evs := f.events(store.EventMCPConnections)
	if len(evs) != 2 || evs[0].Detail != "off" || evs[0].Grants != 1 || evs[1].Detail != "on" {
		t.Errorf("%+v, want on then off ending 1 grant", evs)
	}
}

// Failed client authentication is logged with the request's address and
// never stored; no secret appears.
func TestAuditClientAuthFailedLoggedOnly(t *testing.T) {
	f := newFixture(t)
	log := f.auditLog()
	status, _ := f.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"},
		"client_id": {confidential}, "client_secret": {"wrong-secret"}})
	if status != 401 {
		t.Fatalf("bad secret answered %d", status)
	}
	out := log.String()
	if !strings.Contains(out, "event="+eventClientAuthFailed) || !strings.Contains(out, "client_id="+confidential) ||
		!strings.Contains(out, "client_ip="+testClientIP) || strings.Contains(out, "wrong-secret") {
		t.Errorf("audit log:\n%s", out)
	}
	if page, err := f.store.QueryAudit(context.Background(), store.AuditQuery{}); err != nil || len(page.Events) != 0 {
		t.Errorf("stored %+v, %v", page.Events, err)
	}
}

// The janitor purges the events past the retention, and only those.
func TestAuditRetentionPurged(t *testing.T) {
	f := newFixture(t)
	if _, _, err := f.srv.RotateKeys(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(DefaultAuditRetention - time.Hour)
	if _, _, err := f.srv.RotateKeys(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Hour)
	f.srv.Purge(context.Background(), time.Minute)
	evs := f.events(store.EventKeyRotated)
	if len(evs) != 1 || !evs[0].Time.Equal(f.clock.Now().Add(-2*time.Hour)) {
		t.Errorf("after the purge: %+v, want the newer rotation alone", evs)
	}
}

func TestAuditRetentionChecked(t *testing.T) {
	for _, d := range []time.Duration{-time.Hour, time.Hour, 11 * 365 * 24 * time.Hour} {
		if err := CheckAuditRetention(d); err == nil {
			t.Errorf("retention %v accepted", d)
		}
	}
	for _, d := range []time.Duration{0, MinAuditRetention, DefaultAuditRetention} {
		if err := CheckAuditRetention(d); err != nil {
			t.Errorf("retention %v: %v", d, err)
		}
	}
}

// TestAuditRequestIDMadeOnUse: the adapter's request id (a random UUID in
// Caddy) is made only for a request whose events need it, and then named
// in every event of that request.
func TestAuditRequestIDMadeOnUse(t *testing.T) {
	f := newFixture(t)
	var made int
	f.srv.cfg.RequestID = func(*http.Request) string { made++; return fmt.Sprintf("req-%d", made) }
	for _, path := range []string{sitepath.OIDCConfig, sitepath.JWKS, sitepath.UserInfo} {
		f.serve("GET", path, nil, nil)
	}
	if made != 0 {
		t.Fatalf("%d request ids made for requests that record nothing", made)
	}
	_, c := pkce()
	f.consent(f.authorize(authParams(c), "student"), "student", "approve")
	consent, code := f.oneEvent(store.EventConsentGranted), f.oneEvent(store.EventCodeIssued)
	if consent.RequestID == "" || consent.RequestID != code.RequestID {
		t.Errorf("one request's events name requests %q and %q", consent.RequestID, code.RequestID)
	}
}

// Routine token traffic is stored but logged at DEBUG: a log at INFO has
// the consent and a refresh token's reuse, not a line per code or token.
func TestAuditRoutineEventsLoggedAtDebug(t *testing.T) {
	f := newFixture(t)
	b := &schooltest.Buffer{}
	f.srv.cfg.AuditLogger = slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo}))
	first := f.tokens()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first["refresh_token"].(string)},
		"client_id": {memberClient}}
	if status, m := f.token(form); status != 200 {
		t.Fatalf("refresh: %d %v", status, m)
	}
	f.clock.Advance(time.Hour)
	if status, _ := f.token(form); status != 400 {
		t.Fatalf("reuse: %d", status)
	}
	for typ, logged := range map[string]bool{
		store.EventConsentGranted: true, store.EventRefreshReuse: true,
		store.EventCodeIssued: false, store.EventCodeRedeemed: false, store.EventTokenRefreshed: false,
	} {
		if len(f.events(typ)) != 1 {
			t.Errorf("%s: %d stored, want 1", typ, len(f.events(typ)))
		}
		if got := strings.Contains(b.String(), "event="+typ); got != logged {
			t.Errorf("%s logged at INFO: %v, want %v:\n%s", typ, got, logged, b)
		}
	}
}
