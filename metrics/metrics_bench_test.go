package metrics

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// observeSchools gives n schools of a config's metrics what a school
// counts in a while of ordinary use: token validations, protected and
// /mcp requests, tokens issued, and for one school in ten a refusal. The
// schools' traffic differs (school i has i%97 more protected requests),
// so that a top by traffic has something to rank.
func observeSchools(m *Metrics, n int) {
	for i := range n {
		o := NewObserver(m, fmt.Sprintf("https://s%d.example", i))
		o.TokenLookup(true)
		o.TokenLookup(false)
		for range 1 + i%97 {
			o.ProtectedOutcome("allowed")
		}
		o.MCPCaller("anonymous")
		o.MCPCaller("member")
		o.TokenIssued("authorization_code")
		o.TokenIssued("refresh_token")
		if i%10 == 0 {
			o.Refused("token", "invalid_grant")
			o.ProtectedOutcome("invalid_token")
		}
	}
}

// scrape serves /metrics as Caddy's admin endpoint does (promhttp over
// the config's registry) and returns the answer.
func scrape(b testing.TB, h http.Handler) []byte {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		b.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// schoolgateSeries counts the schoolgate_ series of a text exposition.
func schoolgateSeries(body []byte) int {
	n := 0
	for s := bufio.NewScanner(bytes.NewReader(body)); s.Scan(); {
		if strings.HasPrefix(s.Text(), "schoolgate_") {
			n++
		}
	}
	return n
}

// BenchmarkMetricsScrape measures a scrape of /metrics, with the Go
// runtime's and the process's collectors beside the gateway's, as in
// Caddy's registry, for 10 and 10,000 schools that have
// counted something, by metrics_per_school; it reports the schoolgate_
// series and the bytes of an answer.
func BenchmarkMetricsScrape(b *testing.B) {
	for _, tc := range []struct {
		schools int
		per     PerSchool
	}{
		{10, PerSchool{mode: PerSchoolAll}},
		{10_000, PerSchool{mode: PerSchoolNone}},
		{10_000, PerSchool{mode: PerSchoolTop, top: 50}},
		{10_000, PerSchool{mode: PerSchoolAll}},
	} {
		name := fmt.Sprintf("schools=%d/%s", tc.schools, tc.per.mode)
		if tc.per.top > 0 {
			name += fmt.Sprint(tc.per.top)
		}
		b.Run(name, func(b *testing.B) {
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			m := For(reg)
			m.SetPerSchool(tc.per)
			observeSchools(m, tc.schools)
			h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
			body := scrape(b, h)
			b.ResetTimer()
			for b.Loop() {
				body = scrape(b, h)
			}
			b.ReportMetric(float64(schoolgateSeries(body)), "series")
			b.ReportMetric(float64(len(body)), "bytes")
		})
	}
}

// BenchmarkObserve measures what a protected request counts (a token
// validation and its outcome) on the request path, from every processor
// at once, each counting for a school of its own as a platform's
// requests do.
func BenchmarkObserve(b *testing.B) {
	m := For(prometheus.NewRegistry())
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		o := NewObserver(m, fmt.Sprintf("https://s%d.example", next.Add(1)))
		for pb.Next() {
			o.TokenLookup(true)
			o.ProtectedOutcome("allowed")
		}
	})
}
