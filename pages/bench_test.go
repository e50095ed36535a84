package pages

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// discardWriter is a ResponseWriter that keeps nothing but its header
// map, which a benchmark clears between requests.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkAsset measures the stylesheet's HEAD through the server, as
// browsers revalidate it: the route table's dispatch, then the pages'
// answer (authserver's BenchmarkDispatch has the dispatch alone).
func BenchmarkAsset(b *testing.B) {
	f := newFixture(b)
	r := httptest.NewRequest(http.MethodHead, stylesheetPath, nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		f.srv.ServeHTTP(w, r)
	}
}
