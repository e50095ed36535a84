package caddymodule

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// observeSchools gives n schools of a config's metrics what a school
// counts in a while of ordinary use: token validations, protected and
// /mcp requests, tokens issued, and for one school in ten a refusal. The
// schools' traffic differs (school i has i%97 more protected requests),
// so that a top by traffic has something to rank.
func observeSchools(m *metrics, n int) {
	for i := range n {
		o := newSiteObserver(m, fmt.Sprintf("https://s%d.example", i))
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

// BenchmarkMetricsScrape measures a scrape of /metrics, with Caddy's own
// collectors beside the gateway's, for 10 and 10,000 schools that have
// counted something, by metrics_per_school; it reports the schoolgate_
// series and the bytes of an answer.
func BenchmarkMetricsScrape(b *testing.B) {
	for _, tc := range []struct {
		schools int
		per     perSchool
	}{
		{10, perSchool{mode: metricsPerSchoolAll}},
		{10_000, perSchool{mode: metricsPerSchoolNone}},
		{10_000, perSchool{mode: metricsPerSchoolTop, top: 50}},
		{10_000, perSchool{mode: metricsPerSchoolAll}},
	} {
		name := fmt.Sprintf("schools=%d/%s", tc.schools, tc.per.mode)
		if tc.per.top > 0 {
			name += fmt.Sprint(tc.per.top)
		}
		b.Run(name, func(b *testing.B) {
			ctx, err := caddy.ProvisionContext(&caddy.Config{AppsRaw: caddy.ModuleMap{appName: json.RawMessage(`{}`)}})
			if err != nil {
				b.Fatal(err)
			}
			reg := ctx.GetMetricsRegistry()
			m := metricsFor(reg)
			m.setPerSchool(tc.per)
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

// BenchmarkPlatformHealth measures /schoolgate/health with 10 and 10,000
// schools of a platform built (each has answered a request).
func BenchmarkPlatformHealth(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("built=%d", n), func(b *testing.B) {
			tp := platformOf(b, n, "")
			var wg sync.WaitGroup
			work := make(chan int)
			for range 16 {
				wg.Go(func() {
					for i := range work {
						rec := httptest.NewRecorder()
						url := fmt.Sprintf("https://s%d.example%s", i, discoveryPath)
						if err := tp.serve(rec, platformRequest(url)); err != nil || rec.Code != http.StatusOK {
							panic(fmt.Sprint(url, err, rec.Code))
						}
					}
				})
			}
			for i := range n {
				work <- i
			}
			close(work)
			wg.Wait()
			if got := tp.activeCount(); got != n {
				b.Fatalf("%d schools built, want %d", got, n)
			}
			runningAs(b, tp.app)
			b.ResetTimer()
			for b.Loop() {
				rec := httptest.NewRecorder()
				if err := handleHealth(rec, httptest.NewRequest(http.MethodGet, "/schoolgate/health", nil)); err != nil || rec.Code != http.StatusOK {
					b.Fatal(err, rec.Code)
				}
			}
		})
	}
}

// BenchmarkObserve measures what a protected request counts (a token
// validation and its outcome) on the request path, from every processor
// at once, each counting for a school of its own as a platform's
// requests do.
func BenchmarkObserve(b *testing.B) {
	m := metricsFor(prometheus.NewRegistry())
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		o := newSiteObserver(m, fmt.Sprintf("https://s%d.example", next.Add(1)))
		for pb.Next() {
			o.TokenLookup(true)
			o.ProtectedOutcome("allowed")
		}
	})
}
