package school

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// adminDoc is a minimal admin OpenAPI document whose operation id says
// which version it is.
func adminDoc(version int) []byte {
	return fmt.Appendf(nil, `{"openapi":"3.0.3","info":{"title":"School admin","version":"1"},"paths":{`+
		`"/admin/api/courses/{slug}":{"get":{"operationId":"getCourseV%d","parameters":[{"name":"slug",`+
		`"in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}}}`, version)
}

// The catalog loop and the admin OpenAPI loop (and the admin API's
// catalog refresh) rebuild the documents concurrently. Whatever the
// interleaving, the documents left serving must be built from the latest
// inputs: a rebuild that read the previous admin document must not
// overwrite one built from the new document (that lost update left
// /openapi.json without the school's operations until the next refresh,
// ten minutes later; the e2e test TestOpenAPIMergesTheSchoolsAdminAPI
// failed now and then on a busy machine).
func TestRebuildDocsKeepsTheLatestInputs(t *testing.T) {
	s := newTestSite(t)
	// Each round starts a new admin document and a catalog rebuild at the
	// same instant; without serialization about one round in four loses
	// the new document.
	for round := range 40 {
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() { // the admin OpenAPI loop, fetching a new version
			<-start
			if err := s.useAdminOpenAPI(adminDoc(round)); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() { // a catalog refresh
			<-start
			if err := s.rebuildDocs(); err != nil {
				t.Error(err)
			}
		})
		close(start)
		wg.Wait()
		rec := httptest.NewRecorder()
		s.docs.Load().ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
		if want := fmt.Sprintf("getCourseV%d", round); !strings.Contains(rec.Body.String(), want) {
			t.Fatalf("round %d: /openapi.json was built from an older admin document, not from the latest (%s)", round, want)
		}
	}
}

// An admin OpenAPI document the configuration ships is checked before
// any store is opened, and a school is not built with a bad one.
func TestAdminOpenAPIOfTheConfiguration(t *testing.T) {
	bad := []byte(`{"openapi":"3.1.0","paths":{}}`)
	for _, tt := range []struct {
		name string
		doc  []byte
		ok   bool
	}{{"none", nil, true}, {"3.0", adminDoc(1), true}, {"3.1", bad, false}, {"not JSON", []byte("{"), false}} {
		cfg := testConfig(nil)
		cfg.AdminOpenAPIFile = tt.doc
		if err := CheckDocuments(cfg); (err == nil) != tt.ok {
			t.Errorf("%s: CheckDocuments: %v", tt.name, err)
		}
		cfg.Store = openStore(t)
		_, err := New(context.Background(), cfg)
		var de *BuildError
		if (err == nil) != tt.ok || errors.As(err, &de) {
			t.Errorf("%s: New: %v, want a configuration error: %v", tt.name, err, !tt.ok)
		}
	}
}

// The school is named by its origin until a feed names it, and the
// catalog's item URLs are on its origin.
func TestSchoolNameAndCatalogOrigin(t *testing.T) {
	s := newTestSite(t)
	if got := s.schoolName(); got != testIssuer {
		t.Errorf("school name without a feed %q, want %s", got, testIssuer)
	}
	feed := `{"school":{"name":"S"},"courses":[{"slug":"portrait","title":"Portrait"}]}`
	if err := s.catalog.Import(context.Background(), []byte(feed)); err != nil {
		t.Fatal(err)
	}
	if got := s.schoolName(); got != "S" {
		t.Errorf("school name %q, want the feed's", got)
	}
	if got := s.catalog.Current().URL("course", "portrait"); got != testIssuer+"/courses/portrait" {
		t.Errorf("item URL %q, want %s/courses/portrait", got, testIssuer)
	}
}

// The pages' language for a browser that asks for none of theirs: the
// configured one, else the feed's base language when the pages are
// written in it, else English. Asking loads no cold catalog; the pages
// that show the school's name have loaded it.
func TestSchoolLanguage(t *testing.T) {
	for _, tt := range []struct{ configured, feed, want string }{
		{"", "", "en"},
		{"", "de-CH", "de"},
		{"", "pt", "pt"},
		{"", "nl", "en"},
		{"", "not a tag!", "en"},
		{"it", "de", "it"},
		{"fr", "", "fr"},
	} {
		s := newTestSite(t, func(c *Config) { c.Language = tt.configured })
		if tt.feed != "" {
			feed := `{"school":{"name":"S"},"language":` + strconv.Quote(tt.feed) + `,"courses":[{"slug":"a","title":"A"}]}`
			if err := s.catalog.Import(context.Background(), []byte(feed)); err != nil && tt.feed != "not a tag!" {
				t.Fatal(err)
			}
		}
		if s.catalog.Cold() {
			_ = s.schoolLanguage()
			if !s.catalog.Cold() {
				t.Errorf("configured %q, feed %q: the language loaded the cold catalog", tt.configured, tt.feed)
			}
		}
		s.schoolName() // as the consent page does
		if got := s.schoolLanguage(); got != tt.want {
			t.Errorf("configured %q, feed %q: %q, want %q", tt.configured, tt.feed, got, tt.want)
		}
	}
}
