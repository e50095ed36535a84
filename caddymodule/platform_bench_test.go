package caddymodule

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	platformcore "github.com/schoolgate/schoolgate/platform"
)

// platformOf starts a platform of n schools, https://s<i>.example, given
// before the start as a registry read at start would give them.
func platformOf(b *testing.B, n int, root string) *testPlatform {
	b.Helper()
	return newTestPlatform(b, n+1, func(tp *testPlatform) {
		if root != "" {
			tp.root = root
		}
		for i := range n {
			tp.put(b, fmt.Sprintf("https://s%d.example", i), nil, "")
		}
	})
}

// BenchmarkPlatformLookup measures finding a request's school among 10
// and 10,000: the host table is one map lookup (two when the Host header
// is not in its one spelling), and letting the request into the built
// school is two atomic adds, whatever the number of schools.
func BenchmarkPlatformLookup(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		tp := platformOf(b, n, "")
		host := fmt.Sprintf("s%d.example", n/2)
		tp.do(b, "https://"+host+discoveryPath) // built
		t := tp.tables.Load()
		for _, tt := range []struct{ name, host string }{{"canonical", host}, {"respelled", strings.ToUpper(host) + ".:443"}} {
			r := platformRequest("https://" + tt.host + "/")
			b.Run(fmt.Sprintf("schools=%d/%s", n, tt.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					e := t.Lookup(r.Host, platformcore.HTTPS(r, trustedProxy(r)))
					a := e.Active()
					if !a.Acquire() {
						b.Fatal("not built")
					}
					a.Hold().Touch(time.Now().UnixNano())
					a.Release()
				}
			})
		}
	}
}

// BenchmarkPlatformServe measures a whole request through the platform
// (lookup, the school's discovery answer) among 10 and 10,000 schools.
func BenchmarkPlatformServe(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		tp := platformOf(b, n, "")
		url := fmt.Sprintf("https://s%d.example%s", n/2, discoveryPath)
		tp.do(b, url)
		b.Run(fmt.Sprintf("schools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				if err := tp.serve(rec, platformRequest(url)); err != nil || rec.Code != http.StatusOK {
					b.Fatal(err, rec.Code)
				}
			}
		})
	}
}

// BenchmarkPlatformChange measures applying one registry write among
// 10,000 and 100,000 schools: the record read back and a new host table
// (sharing all but the changed paths of the old one's trie) swapped in.
func BenchmarkPlatformChange(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		tp := platformOf(b, n, "")
		b.Run(fmt.Sprintf("schools=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				tp.put(b, "https://s1.example", nil, fmt.Sprintf(`,"login_url":"/login%d"`, i))
				i++
			}
		})
		tp.end(b)
	}
}

// BenchmarkPlatformColdStart measures the first request (discovery) of a
// school never used by the running platform, whose bbolt file and keys
// are on disk already: its store is opened and its keys read then. Each
// iteration is a different school; p50 and p99 are reported.
func BenchmarkPlatformColdStart(b *testing.B) {
	root := b.TempDir()
	// Each school's file and keys, made by a platform that then ends.
	maker := platformOf(b, b.N, root)
	for i := range b.N {
		maker.do(b, fmt.Sprintf("https://s%d.example%s", i, discoveryPath))
	}
	maker.end(b)
	tp := platformOf(b, b.N, root)
	took := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := range b.N {
		url := fmt.Sprintf("https://s%d.example%s", i, discoveryPath)
		start := time.Now()
		rec := httptest.NewRecorder()
		if err := tp.serve(rec, platformRequest(url)); err != nil || rec.Code != http.StatusOK {
			b.Fatal(err, rec.Code, rec.Body)
		}
		took[i] = time.Since(start)
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[(len(took)*99)/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "max-ms")
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
