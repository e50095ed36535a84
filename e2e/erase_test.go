package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestScaleOutErase: a person erased through A's admin API has their
// tokens refused at B within the revocation bounds, their refresh token
// refused, nothing left to export at B, and a second erasure at B is a
// 404; the audit at B tells of the erasure and names no one.
func TestScaleOutErase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three Caddy processes")
	}
	s := startScaleOut(t, "")
	ctx := t.Context()
	p := s.grant(t, s.addrA, s.addrA)
	if st := s.protectedStatus(t, s.addrB, p.Access); st != http.StatusOK { // B caches it
		t.Fatalf("before the erasure at B: %d", st)
	}
	school := url.QueryEscape(s.lb.URL)
	if st, _, body := get(t, "http://"+s.b.AdminAddr+"/schoolgate/subject?issuer="+school+"&subject=member-1"); st != 200 ||
		!strings.Contains(string(body), `"client_id":"load-app"`) {
		t.Fatalf("export at B: %d %s", st, body)
	}
	if st, _, _ := get(t, "http://"+s.b.AdminAddr+"/schoolgate/subject?issuer="+school+"&subject=member-9"); st != 404 {
		t.Errorf("export of an unknown person at B: %d", st)
	}
	r := postJSON(t, "http://"+s.a.AdminAddr+"/schoolgate/subject/erase", map[string]any{"issuer": s.lb.URL, "subject": "member-1"})
	if r.status != http.StatusOK {
		t.Fatalf("erase at A: %d %s", r.status, r.body)
	}
	took := s.refusedWithin(t, s.addrB, p.Access, time.Second)
	t.Logf("refused at B %v after the erasure at A answered", took)
	if r := s.o.at(s.addrB).refresh(ctx, p.Refresh); r.status != http.StatusBadRequest || r.oauthErr() != "invalid_grant" {
		t.Errorf("the erased person's refresh at B: %v", r)
	}
	if st, _, _ := get(t, "http://"+s.b.AdminAddr+"/schoolgate/subject?issuer="+school+"&subject=member-1"); st != 404 {
		t.Errorf("export at B after the erasure: %d", st)
	}
	if r := postJSON(t, "http://"+s.b.AdminAddr+"/schoolgate/subject/erase", map[string]any{"issuer": s.lb.URL, "subject": "member-1"}); r.status != 404 {
		t.Errorf("erase again at B: %d %s", r.status, r.body)
	}
	st, _, body := get(t, "http://"+s.b.AdminAddr+"/schoolgate/audit?issuer="+school)
	if st != 200 || !strings.Contains(string(body), `"type":"subject_erased"`) || strings.Contains(string(body), "member-1") {
		t.Errorf("audit at B: %d %s", st, body)
	}
}
