package authserver

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// logRecords returns the audit log's records of the event typ, one line
// each.
func logRecords(out, typ string) []string {
	var recs []string
	for line := range strings.Lines(out) {
		if strings.Contains(line, " event="+typ+" ") {
			recs = append(recs, line)
		}
	}
	return recs
}

// wantFields fails unless the record holds every key=value pair.
func wantFields(t *testing.T, rec string, fields ...string) {
	t.Helper()
	for _, f := range fields {
		if !strings.Contains(rec, f) {
			t.Errorf("the record lacks %s:\n%s", f, rec)
		}
	}
}

// Rate-limit refusals are logged, one in rateLimitSample: a run of that
// many refusals leaves exactly one record, with the caller's address and
// the path, and neither the token it carried nor anything stored.
func TestAuditRateLimitedLoggedSampled(t *testing.T) {
	f := limitedFixture(t, RateLimits{Token: Per(1, time.Hour, 1)})
	log := f.auditLog()
	rateLimitedSeen.Store(0) // the sample counts from this test's first refusal
	const secret = "refresh-token-the-log-must-not-show"
	post := func() int {
		rec := f.serve("POST", sitepath.Token, strings.NewReader("grant_type=refresh_token&refresh_token="+secret+"&client_id="+memberClient),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		return rec.Code
	}
	post() // the one the limit allows
	for i := range rateLimitSample {
		if code := post(); code != http.StatusTooManyRequests {
			t.Fatalf("request %d over the limit answered %d", i, code)
		}
	}
	out := log.String()
	recs := logRecords(out, eventRateLimited)
	if len(recs) != 1 {
		t.Fatalf("%d refusals logged %d records, want 1:\n%s", rateLimitSample, len(recs), out)
	}
	wantFields(t, recs[0], "outcome=refused", "client_ip="+testClientIP, sitepath.Token, "issuer=")
	if strings.Contains(out, secret) {
		t.Errorf("the audit log shows the refresh token:\n%s", out)
	}
	if page, err := f.store.QueryAudit(context.Background(), store.AuditQuery{Type: eventRateLimited}); err != nil || len(page.Events) != 0 {
		t.Errorf("stored %+v, %v", page.Events, err)
	}
}

// A refused Client ID Metadata Document is logged once per refusal, with
// the document's URL as the client, the reason and the caller's address;
// a secret the document carried never appears, and nothing is stored.
func TestAuditMetadataRefusedLoggedOnly(t *testing.T) {
	f := newFixture(t)
	d := newDocServer(t)
	host := strings.TrimPrefix(d.URL, "https://")
	const secret = "document-secret-the-log-must-not-show"
	d.docs["/secret.json"] = `{"client_id":"%s","redirect_uris":["https://` + host + `/cb"],"client_secret":"` + secret + `"}`
	f.useMetadata(d, MetadataDocumentsConfig{AllowPrivateNetworks: true})
	log := f.auditLog()
	id := d.URL + "/secret.json"
	if rec := f.authorize(metadataAuthParams(id, "https://"+host+"/cb", "openid"), "student"); rec.Code != http.StatusBadRequest {
		t.Fatalf("a document with a secret answered %d", rec.Code)
	}
	out := log.String()
	recs := logRecords(out, eventMetadataRefused)
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1:\n%s", len(recs), out)
	}
	wantFields(t, recs[0], "client_id="+id, "actor=client", "client_secret", "client_ip="+testClientIP)
	if strings.Contains(out, secret) {
		t.Errorf("the audit log shows the document's secret:\n%s", out)
	}
	if page, err := f.store.QueryAudit(context.Background(), store.AuditQuery{}); err != nil || len(page.Events) != 0 {
		t.Errorf("stored %+v, %v", page.Events, err)
	}
}
