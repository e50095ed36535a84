package school

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/schooltest"
	"github.com/schoolgate/schoolgate/store"
)

// downSite is a test school whose store has been closed after its token
// was minted and its documents built: every store call fails as with a
// database that is down.
func downSite(t *testing.T) (*testSite, *bool) {
	t.Helper()
	ts := newTestSite(t)
	if err := ts.rebuildDocs(); err != nil {
		t.Fatal(err)
	}
	mcpServed := new(bool)
	var mcp http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { *mcpServed = true })
	ts.mcp.Store(&builtMCP{handler: mcp})
	if err := ts.store.Close(); err != nil {
		t.Fatal(err)
	}
	return ts, mcpServed
}

// With the store down, the protected resources and /mcp with a token
// answer 503 with Retry-After and the JSON error temporarily_unavailable:
// never a 401 that makes a client drop a good token, never a 500. Nothing
// is forwarded or served past the check.
func TestStoreFailureIsUnavailable(t *testing.T) {
	for _, tc := range []struct{ method, path string }{
		{"POST", "/account/graphql"},
		{"GET", "/admin/api/courses"},
		{"POST", "/mcp"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			ts, mcpServed := downSite(t)
			r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(`{}`))
			r.Header.Set("Authorization", "Bearer "+ts.token)
			r.Header.Set("Content-Type", "application/json")
			rec := ts.serve(t, r)
			if ts.upstream.header != nil || *mcpServed {
				t.Error("served past the token check")
			}
			checkUnavailable(t, rec)
			// Counted in the school's usage as the store's 503, not as a
			// refusal of the token.
			got := ts.usage.rec.peek(time.Now())
			if len(got) != 1 || got[0].Causes[store.CauseStoreUnavailable] != 1 || got[0].Refused != 0 {
				t.Errorf("usage counted %+v", got)
			}
		})
	}
}

// checkUnavailable checks a store failure's answer (schooltest's).
var checkUnavailable = schooltest.CheckUnavailable

// Documents are not rebuilt as if MCP connections were off when the
// switch cannot be read: the previous ones keep serving.
func TestRebuildDocsKeepsDocumentsWhenTheSwitchIsUnreadable(t *testing.T) {
	ts, _ := downSite(t)
	before := ts.docs.Load()
	if err := ts.rebuildDocs(); !IsStoreFailure(err) {
		t.Errorf("rebuild: %v, want a store failure", err)
	}
	if ts.docs.Load() != before {
		t.Error("the documents were replaced")
	}
}
