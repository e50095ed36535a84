package authserver

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/sitepath"
)

// BenchmarkTokenCPURefusedMix is BenchmarkTokenCPU's code exchange with
// one in ten redeemed with another attempt's verifier (invalid_grant),
// as the bench's refused mix: what storing refusals for the doctor costs
// the token endpoint, in allocations an exchange (the steady figure on a
// loaded machine) and CPU. Codes and requests are made outside the timer.
func BenchmarkTokenCPURefusedMix(b *testing.B) {
	f := newFixture(b)
	f.srv.limits = newLimiters(RateLimits{})
	if err := boltstore.NoSync(f.store); err != nil {
		b.Fatal(err)
	}
	w := &statusWriter{discardWriter: discardWriter{h: http.Header{}}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		b.StopTimer()
		v, c := pkce()
		code := f.code(authParams(c), v)
		want := http.StatusOK
		if i%10 == 0 {
			v, _ = pkce() // another attempt's
			want = http.StatusBadRequest
		}
		i++
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {memberRedirect}, "client_id": {memberClient}, "code_verifier": {v},
			"resource": {issuer}}
		r := httptest.NewRequest(http.MethodPost, sitepath.Token, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		clear(w.h)
		w.status = 0
		b.StartTimer()
		f.srv.ServeHTTP(w, r)
		b.StopTimer()
		if got := max(w.status, http.StatusOK); got != want {
			b.Fatalf("token endpoint: %d, want %d", got, want)
		}
		b.StartTimer()
	}
}
