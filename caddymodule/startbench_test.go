package caddymodule

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// BenchmarkStartSchools measures, in this process, what the bench's -schools
// scenario calls first start and restart to serving: a config of 1,000
// school site blocks (each its own issuer, data directory, catalog file and
// vendor) loaded on empty data directories, where every school creates its
// store and keys; and loaded again on the data a first start left. Run one
// with -cpuprofile or -trace to see where a school's start goes.
func BenchmarkStartSchools(b *testing.B) {
	const n = 1000
	for _, restart := range []bool{false, true} {
		name := "new"
		if restart {
			name = "restart"
		}
		b.Run(fmt.Sprintf("%s/schools=%d", name, n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				home := b.TempDir()
				cfg := schoolsCaddyfile(b, home, n)
				if restart {
					loadStop(b, home, cfg)
				}
				b.StartTimer()
				if err := runCaddyfile(b, home, cfg); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := caddy.Stop(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/school")
		})
	}
}

// loadStop starts cfg and stops it.
func loadStop(b *testing.B, home, cfg string) {
	if err := runCaddyfile(b, home, cfg); err != nil {
		b.Fatal(err)
	}
	if err := caddy.Stop(); err != nil {
		b.Fatal(err)
	}
}

// schoolsCaddyfile writes a catalog feed of 40 courses and returns the
// Caddyfile of n schools, each with that feed, as the bench's -schools
// scenario generates them.
func schoolsCaddyfile(tb testing.TB, home string, n int) string {
	tb.Helper()
	type course struct {
		Slug    string         `json:"slug"`
		Title   string         `json:"title"`
		Summary string         `json:"summary"`
		Price   map[string]any `json:"price"`
		Tags    []string       `json:"tags"`
	}
	courses := make([]course, 40)
	for i := range courses {
		courses[i] = course{Slug: fmt.Sprintf("course-%05d", i+1), Title: fmt.Sprintf("Portrait photography lighting %d", i+1),
			Summary: "Learn lighting for portrait photography, step by step.",
			Price:   map[string]any{"amount": 19 + i, "currency": "EUR"}, Tags: []string{"portrait", "lighting"}}
	}
	feed, err := json.Marshal(map[string]any{"school": map[string]string{"name": "Bench School"}, "courses": courses})
	if err != nil {
		tb.Fatal(err)
	}
	catalog := filepath.Join(home, "catalog.json")
	if err := os.WriteFile(catalog, feed, 0o600); err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `
http://s%[1]d.localhost {
	school_gateway http://127.0.0.1:9 {
		issuer http://s%[1]d.localhost
		data %[2]s/data/s%[1]d
		catalog %[3]s refresh 10m
		rate_limit off
		vendor "Bench Agent" {
			client_id bench-agent
			redirect_uri http://127.0.0.1/cb
			audience member
			scopes openid courses:read
		}
	}
}
`, i, home, catalog)
	}
	return b.String()
}
