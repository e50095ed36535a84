package demoschool

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// The school's admin OpenAPI document is valid, and every operation it
// lists is one the admin API really routes (so the gateway never merges
// a promise the school does not keep).
func TestAdminOpenAPIDescribesTheAdminAPI(t *testing.T) {
	h := New(Options{})
	rec := call(t, h, "GET", "/admin-openapi.json", nil, nil)
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("GET /admin-openapi.json: %d %s", rec.Code, rec.Header())
	}
	doc, err := openapi3.NewLoader().LoadFromData(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("invalid: %v", err)
	}
	operator := http.Header{"X-School-Audience": {"operator"}, "X-School-Subject": {"owner-1"}}
	fill := strings.NewReplacer("{slug}", "photography-fundamentals", "{id}", "member-1")
	n := 0
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if method != "GET" {
				// Only whether the route exists matters: a wrong method
				// is 405 and an unknown path 404, before any body is read.
				rec := call(t, h, method, fill.Replace(path), strings.NewReader("{"), operator)
				if rec.Code == http.StatusNotFound || rec.Code == http.StatusMethodNotAllowed {
					t.Errorf("%s %s is documented but answers %d", method, path, rec.Code)
				}
				n++
				continue
			}
			if rec := call(t, h, method, fill.Replace(path), nil, operator); rec.Code != http.StatusOK {
				t.Errorf("%s %s is documented but answers %d: %s", method, path, rec.Code, rec.Body)
			}
			n++
		}
	}
	if n < 9 {
		t.Errorf("only %d operations documented", n)
	}
}
