package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/policy"
)

// bigIndex is a 10,000-course catalog with overlapping vocabulary.
func bigIndex(b *testing.B) *catalog.Index {
	subjects := []string{"photography", "lighting", "portrait", "landscape", "editing", "studio", "street", "night", "wildlife", "food"}
	var sb strings.Builder
	sb.WriteString(`{"school":{"name":"Big School"},"courses":[`)
	for i := range 10000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		s1, s2 := subjects[i%len(subjects)], subjects[(i/7)%len(subjects)]
		fmt.Fprintf(&sb, `{"slug":"course-%d","title":"%s and %s %d","summary":"Learn %s with %s assignments.","price":{"amount":%d,"currency":"EUR"},"tags":[%q]}`,
			i, s1, s2, i, s1, s2, 10+i%90, s2)
	}
	sb.WriteString(`]}`)
	f, err := catalog.Parse([]byte(sb.String()))
	if err != nil {
		b.Fatal(err)
	}
	return catalog.NewIndex(testOrigin, f)
}

// BenchmarkSearchCatalogCall measures one tools/call of search_catalog
// through the whole handler (edge, mcp-go, tool), without the network.
func BenchmarkSearchCatalogCall(b *testing.B) {
	ix := bigIndex(b)
	h, err := New(Options{SiteName: "Big School", Origin: testOrigin, Catalog: func(context.Context) *catalog.Index { return ix }})
	if err != nil {
		b.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_catalog","arguments":{"query":"portrait lighting","limit":10}}}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.Host = "school.example"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", testVersion)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "course-") {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkScopeChallenge measures what the edge adds to a request with
// a token: reading the tools/call's name (and, for account_query, whether
// its query is a mutation) and checking the token's scopes.
func BenchmarkScopeChallenge(b *testing.B) {
	ctx := WithIdentity(context.Background(), testTokens["member"])
	for _, c := range []struct{ name, body string }{
		{"search_catalog", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_catalog","arguments":{"query":"portrait lighting","limit":10}}}`},
		{"my_enrollments", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"my_enrollments","arguments":{"first":20}}}`},
		{"account_query", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"account_query","arguments":{"query":"query($n: Int) { viewer { email enrolledCourses(first: $n) { nodes { slug } } } }","variables":{"n":5}}}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := []byte(c.body)
			b.ReportAllocs()
			for b.Loop() {
				if ch := scopeChallenge(ctx, body, testMetadata, policy.Authorize); ch != nil {
					b.Fatal(ch.Description)
				}
			}
		})
	}
}
