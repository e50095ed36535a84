package sitedocs

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/sitepath"
)

func TestOwns(t *testing.T) {
	set := mustBuild(t, testSite(), testFeed())
	tests := map[string]bool{
		"/openapi.json": true, "/auth.md": true, "/llms.txt": true, "/pricing.md": true,
		"/": false, "/openapi.json/": false, "/OPENAPI.JSON": false, "/docs/auth.md": false,
		"/llms-full.txt": false, "/mcp": false, "": false,
	}
	for path, want := range tests {
		if got := set.Owns(path); got != want {
			t.Errorf("Owns(%q) = %v, want %v", path, got, want)
		}
	}
	var none *Set
	if none.Owns("/auth.md") {
		t.Errorf("a nil set owns a path")
	}
}

func TestServeDocuments(t *testing.T) {
	set := mustBuild(t, testSite(), testFeed())
	tests := []struct {
		path, contentType, prefix string
	}{
		{sitepath.OpenAPI, "application/json", "{\n  \"openapi\": \"3.0.3\""},
		{sitepath.AuthGuide, "text/markdown; charset=utf-8", "# Authentication at "},
		{sitepath.LLMs, "text/plain; charset=utf-8", "# Demo School of Photography\n"},
		{sitepath.Pricing, "text/markdown; charset=utf-8", "# Pricing at "},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			resp, b := get(t, set, http.MethodGet, tc.path, nil)
			want := map[string]string{
				"Content-Type":                tc.contentType,
				"Access-Control-Allow-Origin": "*",
				"Cache-Control":               "public, max-age=300",
				"X-Content-Type-Options":      "nosniff",
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			for k, v := range want {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if et := resp.Header.Get("ETag"); !strings.HasPrefix(et, `"`) || !strings.HasSuffix(et, `"`) || len(et) < 10 {
				t.Errorf("ETag %q is not a strong entity tag", et)
			}
			if resp.Header.Get("Content-Length") == "" {
				t.Errorf("no Content-Length")
			}
			if !strings.HasPrefix(b, tc.prefix) {
				t.Errorf("body starts %.60q", b)
			}
		})
	}
}

func TestServeMethods(t *testing.T) {
	set := mustBuild(t, testSite(), nil)
	tests := []struct {
		method   string
		status   int
		withBody bool
	}{
		{http.MethodGet, http.StatusOK, true},
		{http.MethodHead, http.StatusOK, false},
		{http.MethodPost, http.StatusMethodNotAllowed, true},
		{http.MethodPut, http.StatusMethodNotAllowed, true},
		{http.MethodDelete, http.StatusMethodNotAllowed, true},
		{http.MethodPatch, http.StatusMethodNotAllowed, true},
		{http.MethodOptions, http.StatusMethodNotAllowed, true},
		{"PROPFIND", http.StatusMethodNotAllowed, true},
	}
	for _, tc := range tests {
		t.Run(tc.method, func(t *testing.T) {
			resp, b := get(t, set, tc.method, sitepath.Pricing, nil)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if (b != "") != tc.withBody {
				t.Errorf("body %q, want body: %v", b, tc.withBody)
			}
			if tc.status != http.StatusMethodNotAllowed {
				return
			}
			if got := resp.Header.Get("Allow"); got != "GET, HEAD" {
				t.Errorf("Allow = %q", got)
			}
			var e map[string]string
			if err := json.Unmarshal([]byte(b), &e); err != nil || e["error"] != "method_not_allowed" {
				t.Errorf("405 body %q (%v)", b, err)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("405 Content-Type %q", ct)
			}
		})
	}
}

func TestServeHeadMatchesGet(t *testing.T) {
	set := mustBuild(t, testSite(), testFeed())
	for _, p := range []string{sitepath.OpenAPI, sitepath.AuthGuide, sitepath.LLMs, sitepath.Pricing} {
		g, gb := get(t, set, http.MethodGet, p, nil)
		h, hb := get(t, set, http.MethodHead, p, nil)
		if hb != "" {
			t.Errorf("HEAD %s has a body", p)
		}
		for _, k := range []string{"Content-Type", "Content-Length", "ETag", "Cache-Control"} {
			if g.Header.Get(k) != h.Header.Get(k) {
				t.Errorf("%s: %s differs: GET %q, HEAD %q", p, k, g.Header.Get(k), h.Header.Get(k))
			}
		}
		if g.Header.Get("Content-Length") != strconv.Itoa(len(gb)) {
			t.Errorf("%s: Content-Length %s, body %d bytes", p, g.Header.Get("Content-Length"), len(gb))
		}
	}
}

func TestServeConditional(t *testing.T) {
	set := mustBuild(t, testSite(), testFeed())
	resp, _ := get(t, set, http.MethodGet, sitepath.AuthGuide, nil)
	etag := resp.Header.Get("ETag")
	other, _ := get(t, set, http.MethodGet, sitepath.Pricing, nil)
	tests := []struct {
		name   string
		method string
		inm    []string
		status int
	}{
		{"no header", http.MethodGet, nil, http.StatusOK},
		{"same etag", http.MethodGet, []string{etag}, http.StatusNotModified},
		{"same etag HEAD", http.MethodHead, []string{etag}, http.StatusNotModified},
		{"weak form", http.MethodGet, []string{"W/" + etag}, http.StatusNotModified},
		{"in a list", http.MethodGet, []string{`"abc", ` + etag}, http.StatusNotModified},
		{"second header", http.MethodGet, []string{`"abc"`, etag}, http.StatusNotModified},
		{"star", http.MethodGet, []string{"*"}, http.StatusNotModified},
		{"other document", http.MethodGet, []string{other.Header.Get("ETag")}, http.StatusOK},
		{"unquoted", http.MethodGet, []string{strings.Trim(etag, `"`)}, http.StatusOK},
		{"garbage", http.MethodGet, []string{`"nope"`}, http.StatusOK},
		{"POST still 405", http.MethodPost, []string{etag}, http.StatusMethodNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.inm {
				h.Add("If-None-Match", v)
			}
			resp, b := get(t, set, tc.method, sitepath.AuthGuide, h)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status == http.StatusNotModified {
				if b != "" {
					t.Errorf("304 with a body")
				}
				if resp.Header.Get("ETag") != etag {
					t.Errorf("304 ETag %q", resp.Header.Get("ETag"))
				}
			}
		})
	}
}

func TestETagFollowsContent(t *testing.T) {
	a := mustBuild(t, testSite(), testFeed())
	f := testFeed()
	f.Courses[0].Price = eur(59)
	b := mustBuild(t, testSite(), f)
	if mustDoc(t, a, sitepath.Pricing).etag == mustDoc(t, b, sitepath.Pricing).etag {
		t.Errorf("pricing ETag unchanged after a price change")
	}
	if mustDoc(t, a, sitepath.AuthGuide).etag != mustDoc(t, b, sitepath.AuthGuide).etag {
		t.Errorf("auth ETag changed with the catalog")
	}
}

func TestServeUnknownPath(t *testing.T) {
	set := mustBuild(t, testSite(), nil)
	resp, b := get(t, set, http.MethodGet, "/nope.md", nil)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(b, "not_found") {
		t.Errorf("status %d body %q", resp.StatusCode, b)
	}
}

func BenchmarkServeHTTP(b *testing.B) {
	set := mustBuild(b, testSite(), testFeed())
	for _, p := range []string{sitepath.OpenAPI, sitepath.LLMs} {
		b.Run(strings.TrimPrefix(p, "/"), func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, p, nil)
			b.ReportAllocs()
			for b.Loop() {
				set.ServeHTTP(discard{h: http.Header{}}, req)
			}
		})
	}
	b.Run("304", func(b *testing.B) {
		req := httptest.NewRequest(http.MethodGet, sitepath.AuthGuide, nil)
		req.Header.Set("If-None-Match", mustDoc(b, set, sitepath.AuthGuide).etag)
		b.ReportAllocs()
		for b.Loop() {
			set.ServeHTTP(discard{h: http.Header{}}, req)
		}
	})
}

// discard is a ResponseWriter that keeps nothing, so the benchmark
// measures the handler rather than a recorder's buffer.
type discard struct{ h http.Header }

func (d discard) Header() http.Header         { return d.h }
func (d discard) Write(p []byte) (int, error) { return len(p), nil }
func (d discard) WriteHeader(int)             {}

// mustDoc renders one document of a set.
func mustDoc(t testing.TB, s *Set, path string) *document {
	t.Helper()
	d, err := s.docs[path].get()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return d
}

// A document is rendered on its first request, not when the set is built:
// an idle school keeps none of its documents in memory.
func TestDocumentsRenderOnFirstRequest(t *testing.T) {
	set := mustBuild(t, testSite(), testFeed())
	for p, l := range set.docs {
		if l.doc != nil {
			t.Errorf("%s was rendered before anyone asked", p)
		}
	}
	set.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, sitepath.OpenAPI, nil))
	if set.docs[sitepath.OpenAPI].doc == nil {
		t.Error("the OpenAPI document was not kept after its first request")
	}
	if set.docs[sitepath.LLMs].doc != nil {
		t.Error("serving one document rendered another")
	}
}

// A document rendered from everything the site has is public for five
// minutes; one that lacks what the site has but could not read yet (its
// catalog: every document, titled by the catalog's name; its admin
// OpenAPI document: /openapi.json) is kept by no cache, so that a cache in
// front of a school that is starting does not keep its empty catalog.
func TestServeCacheControl(t *testing.T) {
	const public, noStore = "public, max-age=300", "no-store"
	all := []string{sitepath.OpenAPI, sitepath.AuthGuide, sitepath.LLMs, sitepath.Pricing}
	for _, tt := range []struct {
		name                  string
		catalogUnread, apiOff bool
		feed                  bool
		want                  map[string]string // by path; unnamed ones are public
	}{
		{name: "complete", feed: true},
		{name: "no catalog configured"},
		{name: "catalog unread", catalogUnread: true,
			want: map[string]string{sitepath.OpenAPI: noStore, sitepath.AuthGuide: noStore, sitepath.LLMs: noStore, sitepath.Pricing: noStore}},
		{name: "catalog unread but given", catalogUnread: true, feed: true},
		{name: "admin OpenAPI unread", apiOff: true, feed: true, want: map[string]string{sitepath.OpenAPI: noStore}},
	} {
		s := testSite()
		s.CatalogUnread, s.AdminOpenAPIUnread = tt.catalogUnread, tt.apiOff
		var feed *catalog.Feed
		if tt.feed {
			feed = testFeed()
		}
		set := mustBuild(t, s, feed)
		for _, path := range all {
			want := tt.want[path]
			if want == "" {
				want = public
			}
			for _, method := range []string{http.MethodGet, http.MethodHead} {
				resp, _ := get(t, set, method, path, nil)
				if got := resp.Header.Get("Cache-Control"); resp.StatusCode != http.StatusOK || got != want {
					t.Errorf("%s: %s %s: %d, Cache-Control %q, want 200 and %q", tt.name, method, path, resp.StatusCode, got, want)
				}
				// The ETag still names the body: a conditional request is
				// answered 304 with the same Cache-Control.
				resp, _ = get(t, set, method, path, http.Header{"If-None-Match": {resp.Header.Get("ETag")}})
				if got := resp.Header.Get("Cache-Control"); resp.StatusCode != http.StatusNotModified || got != want {
					t.Errorf("%s: conditional %s %s: %d, Cache-Control %q, want 304 and %q", tt.name, method, path, resp.StatusCode, got, want)
				}
			}
		}
		if tt.catalogUnread && !tt.feed {
			for _, path := range []string{sitepath.LLMs, sitepath.Pricing} {
				if _, b := get(t, set, http.MethodGet, path, nil); !strings.Contains(b, "catalog could not be loaded yet") ||
					strings.Contains(b, "No catalog has been imported") {
					t.Errorf("%s: %s does not say the catalog could not be loaded yet:\n%s", tt.name, path, b)
				}
			}
		}
	}
}
