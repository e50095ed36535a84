package authserver

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/store"
)

// BenchmarkDoctorAfterFlood: a flood of 10,000 refused exchanges, each
// from a made-up client_id (the worst case: no two alike), flushed as
// the school does every few seconds (here every 1,000), then the doctor
// of the school's real application, which it answers from among them.
// It reports the store's growth (rows kept, bytes of the bbolt file) and
// the doctor's time per answer (ns/op).
func BenchmarkDoctorAfterFlood(b *testing.B) {
	f := newFixtureWith(b, func(c *Config) { c.RateLimits = &RateLimitOptions{Off: true} })
	ctx := context.Background()
	// The real application's own attempt, refused.
	v, c := pkce()
	code := f.code(authParams(c), v)
	other, _ := pkce()
	f.exchange(code, other)
	if err := f.srv.FlushSteps(ctx); err != nil {
		b.Fatal(err)
	}
	before := fileSize(b, f.path)
	for i := range 10000 {
		f.token(url.Values{"grant_type": {"authorization_code"}, "code": {"sgac_made_up"},
			"client_id": {"flood-" + strconv.Itoa(i)}, "code_verifier": {strings.Repeat("v", 43)}})
		if i%1000 == 999 {
			if err := f.srv.FlushSteps(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	rows := 0
	for i := range 10000 {
		r, err := f.store.QuerySteps(ctx, storeQuery("flood-"+strconv.Itoa(i)))
		if err != nil {
			b.Fatal(err)
		}
		rows += len(r)
	}
	grown := fileSize(b, f.path) - before
	b.ResetTimer()
	for b.Loop() {
		rep, err := f.srv.Doctor(ctx, memberClient, "en")
		if err != nil || rep.Stopped == nil || rep.Stopped.Reason != ReasonVerifierMismatch {
			b.Fatalf("%+v %v", rep, err)
		}
	}
	b.ReportMetric(float64(rows), "flood-rows")
	b.ReportMetric(float64(grown), "store-bytes-grown")
}

func fileSize(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

func storeQuery(clientID string) store.StepQuery { return store.StepQuery{ClientID: clientID} }

// BenchmarkNoteStep is what noting a refusal adds to the request that is
// refused: a counter's update in memory, the store untouched.
func BenchmarkNoteStep(b *testing.B) {
	f := newFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		f.srv.noteStep(StepToken, memberClient, "member-1", ReasonVerifierMismatch, "invalid_grant", "")
	}
}
