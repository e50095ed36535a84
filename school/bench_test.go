package school

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/admission"
)

// BenchmarkProtectedRequest measures the gateway's work on an allowed
// request to /account/graphql (canonical path, token check on a warm
// validation cache, identity headers), with the identity assertion off,
// on, and on alone (identity_headers assertion). signatures/op counts the
// assertions signed: at steady state a token is signed once per
// validation (every 5 s), never per request.
func BenchmarkProtectedRequest(b *testing.B) {
	for _, bc := range []struct {
		name, audience string
		only           bool
	}{{"assertion-off", "", false}, {"assertion-on", "http://127.0.0.1:9080", false}, {"assertion-only", "http://127.0.0.1:9080", true}} {
		b.Run(bc.name, func(b *testing.B) {
			// No observer: the test's counts would allocate.
			ts := newTestSite(b, withAssertion(bc.audience), func(c *Config) {
				c.Observer = nil
				if bc.only {
					c.IdentityHeaders = IdentityHeadersAssertion
				}
			})
			r := httptest.NewRequest("POST", "/account/graphql", nil)
			auth := []string{"Bearer " + ts.token}
			w := httptest.NewRecorder()
			// Warm the validation cache, as a client's earlier request would.
			r.Header["Authorization"] = auth
			if err := ts.Serve(w, r, ts.upstream); err != nil || ts.upstream.header == nil {
				b.Fatalf("not forwarded: %v %d", err, w.Code)
			}
			clear(ts.upstream.assertions)
			b.ReportAllocs()
			for b.Loop() {
				// The gateway removed the token; the identity headers it
				// set are stripped again on entry, as a client's would be.
				r.Header["Authorization"] = auth
				_ = ts.Serve(w, r, ts.upstream)
			}
			b.ReportMetric(float64(len(ts.upstream.assertions))/float64(b.N), "signatures/op")
			if bc.audience != "" && ts.upstream.header.Get(AssertionHeader) == "" {
				b.Fatal("no assertion forwarded")
			}
		})
	}
}

// BenchmarkDocument measures a document request of a school that has
// started (its catalog loaded, its documents rendered): /llms.txt, and
// /openapi.json of a school whose admin OpenAPI document comes from a
// URL. What a starting school waits for is checked on every request; on
// a started one that must cost no wait and no allocation of its own.
func BenchmarkDocument(b *testing.B) {
	for _, path := range []string{"/llms.txt", "/openapi.json"} {
		b.Run(path[1:], func(b *testing.B) {
			ts := newTestSite(b, func(c *Config) {
				c.Observer, c.Catalog, c.AdminOpenAPI = nil, "http://127.0.0.1:1/catalog.json", "http://127.0.0.1:1/openapi.json"
				c.Logger = slog.New(slog.DiscardHandler) // the feed is unreachable, and each retry says so
			})
			if err := ts.catalog.Import(context.Background(), []byte(waitFeed)); err != nil {
				b.Fatal(err)
			}
			if err := ts.useAdminOpenAPI(adminDoc(1)); err != nil {
				b.Fatal(err)
			}
			w := &discardWriter{h: http.Header{}}
			r := httptest.NewRequest("GET", path, nil)
			if err := ts.Serve(w, r, ts.upstream); err != nil || w.status != http.StatusOK {
				b.Fatalf("%s: %v %d", path, err, w.status)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = ts.Serve(w, r, ts.upstream)
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps the status and nothing
// else, so that a benchmark counts the handler's allocations alone.
type discardWriter struct {
	h      http.Header
	status int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(status int)      { d.status = status }

// BenchmarkAdmission is what admission adds to a request the school
// serves itself (the discovery document) and to a protected one: without
// a gate, with the gate of a school alone on the instance (the fast
// path), and with the instance shared by a second school and slots free
// (counted, the slot in the request's context).
func BenchmarkAdmission(b *testing.B) {
	for _, path := range []string{"/.well-known/openid-configuration", "/account/graphql"} {
		for _, mode := range []string{"none", "lone", "shared"} {
			b.Run(strings.Trim(strings.ReplaceAll(path, "/", "-"), "-")+"/"+mode, func(b *testing.B) {
				var gate *admission.Gate
				if mode != "none" {
					gate = admission.NewGate(admission.Options{Concurrency: 1 << 20})
				}
				ts := newTestSite(b, func(c *Config) {
					c.Observer = nil
					if gate != nil {
						c.Admission = gate.School(1)
					}
				})
				if mode == "shared" {
					sl, _ := gate.School(1).Admit(context.Background())
					sl.Release()
				}
				method := "GET"
				if path == "/account/graphql" {
					method = "POST"
				}
				r := httptest.NewRequest(method, path, nil)
				auth := []string{"Bearer " + ts.token}
				b.ReportAllocs()
				for b.Loop() {
					r.Header["Authorization"] = auth
					_ = ts.Serve(httptest.NewRecorder(), r, ts.upstream)
				}
			})
		}
	}
}
