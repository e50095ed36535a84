package caddymodule

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/policy"
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
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "school.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g := &Gateway{Issuer: "https://school.example"}
	g.setDefaults()
	as, err := authserver.New(context.Background(), authserver.Config{Issuer: g.Issuer, SessionURL: "https://school.example/api/session"}, store)
	if err != nil {
		t.Fatal(err)
	}
	s := &site{gateway: g, as: as, store: store, policy: &policy.Policy{AdminPrefix: g.AdminPrefix}}
	s.extras.catalog = catalog.NewManager(g.Issuer, store)

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
		s.extras.docs.Load().ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
		if want := fmt.Sprintf("getCourseV%d", round); !strings.Contains(rec.Body.String(), want) {
			t.Fatalf("round %d: /openapi.json was built from an older admin document, not from the latest (%s)", round, want)
		}
	}
}
