package school

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// waitFeed is the catalog feed with three courses.
const waitFeed = `{"school":{"name":"Held School"},"courses":[` +
	`{"slug":"light","title":"Light"},{"slug":"shadow","title":"Shadow"},{"slug":"colour","title":"Colour"}]}`

// heldSource serves body at any path once released; until then each
// request waits. failing makes it answer 500 instead.
type heldSource struct {
	*httptest.Server
	requested chan struct{}
	released  chan struct{}
	failing   atomic.Bool
}

func newHeldSource(t *testing.T, body string) *heldSource {
	t.Helper()
	h := &heldSource{requested: make(chan struct{}, 1), released: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case h.requested <- struct{}{}:
		default:
		}
		select {
		case <-h.released:
		case <-r.Context().Done():
			return
		}
		if h.failing.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(h.Close)
	t.Cleanup(h.release) // before Close: no handler is left waiting
	return h
}

func (h *heldSource) release() {
	select {
	case <-h.released:
	default:
		close(h.released)
	}
}

// getDoc serves method path through the school under ctx.
func getDoc(t *testing.T, ts *testSite, ctx context.Context, method, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, nil).WithContext(ctx)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	return ts.serve(t, r)
}

// within is a context that ends after d, for a request whose wait is to
// be cut short.
func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// checkComplete checks a document rendered with the feed and served as
// cacheable.
func checkComplete(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "public, max-age=300" {
		t.Fatalf("%s: %d, Cache-Control %q, want 200 and public\n%s", what, rec.Code, rec.Header().Get("Cache-Control"), rec.Body)
	}
	if body := rec.Body.String(); !strings.Contains(body, "Held School") {
		t.Errorf("%s lacks the school's name:\n%s", what, body)
	}
}

// checkStarting checks the answer of a document whose school is still
// loading its catalog: 503, Retry-After, kept by no cache, readable
// cross-origin, saying the school is starting.
func checkStarting(t *testing.T, what string, rec *httptest.ResponseRecorder, loading string) {
	t.Helper()
	h := rec.Header()
	if rec.Code != http.StatusServiceUnavailable || h.Get("Retry-After") != "5" || h.Get("Cache-Control") != "no-store" ||
		h.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("%s while loading: %d %v\n%s", what, rec.Code, h, rec.Body)
	}
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error"] != "temporarily_unavailable" ||
		!strings.Contains(body["error_description"], "starting and is still loading "+loading) {
		t.Errorf("%s while loading: body %s", what, rec.Body)
	}
}

var allDocuments = []string{sitepath.OpenAPI, sitepath.AuthGuide, sitepath.LLMs, sitepath.Pricing}

// The first request for a document of a school whose catalog feed is
// still being imported for the first time waits for that import, as a
// catalog tool of /mcp does, and answers with the catalog: never the
// documents of a school that sells nothing, public for five minutes.
func TestDocumentWaitsForTheFirstImport(t *testing.T) {
	feed := newHeldSource(t, waitFeed)
	ts := newTestSite(t, func(c *Config) { c.Catalog = feed.URL + "/catalog.json" })
	answers := make(chan *httptest.ResponseRecorder, len(allDocuments))
	for _, path := range allDocuments {
		go func() { answers <- getDoc(t, ts, context.Background(), http.MethodGet, path) }()
	}
	<-feed.requested
	feed.release()
	for range allDocuments {
		rec := <-answers
		checkComplete(t, "a document asked for during the first import", rec)
	}
	if body := getDoc(t, ts, context.Background(), http.MethodGet, sitepath.LLMs).Body.String(); !strings.Contains(body, "/courses/colour") {
		t.Errorf("llms.txt lacks the feed's courses:\n%s", body)
	}
}

// The wait is bounded (by firstImportWait and by the request): a
// document still without its catalog then is answered 503, with
// Retry-After and no-store, whatever the request's conditions; nothing
// incomplete is kept, and once the import is in the documents are whole
// and cacheable. A method the documents refuse is refused at once.
func TestDocumentWhileTheCatalogLoads(t *testing.T) {
	feed := newHeldSource(t, waitFeed)
	ts := newTestSite(t, func(c *Config) { c.Catalog = feed.URL + "/catalog.json" })
	for _, path := range allDocuments {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			checkStarting(t, method+" "+path, getDoc(t, ts, within(t, 50*time.Millisecond), method, path), "its catalog")
		}
		checkStarting(t, "a conditional GET "+path,
			getDoc(t, ts, within(t, 50*time.Millisecond), http.MethodGet, path, "If-None-Match", "*"), "its catalog")
		if rec := getDoc(t, ts, context.Background(), http.MethodPost, path); rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s while loading: %d, want 405 at once", path, rec.Code)
		}
	}
	feed.release()
	for _, path := range allDocuments {
		checkComplete(t, path+" after the import", getDoc(t, ts, context.Background(), http.MethodGet, path))
	}
}

// A first import that failed, with nothing stored to fall back on, does
// not leave every document request waiting: they are answered at once
// with documents that say the catalog could not be loaded yet, kept by
// no cache; the import that then succeeds makes them whole and
// cacheable.
func TestDocumentAfterAFailedFirstImport(t *testing.T) {
	feed := newHeldSource(t, waitFeed)
	feed.failing.Store(true)
	feed.release()
	src := feed.URL + "/catalog.json"
	ts := newTestSite(t, func(c *Config) { c.Catalog = src })
	rec := getDoc(t, ts, context.Background(), http.MethodGet, sitepath.Pricing) // waits for the failed import
	if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-store" ||
		!strings.Contains(rec.Body.String(), "catalog could not be loaded yet") {
		t.Fatalf("pricing.md after a failed first import: %d %q\n%s", rec.Code, rec.Header().Get("Cache-Control"), rec.Body)
	}
	for _, path := range allDocuments {
		rec := getDoc(t, ts, within(t, time.Second), http.MethodGet, path)
		if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s after a failed first import: %d %q, want 200 no-store at once", path, rec.Code, rec.Header().Get("Cache-Control"))
		}
	}
	// The schedule's next try succeeds; a request that comes before it
	// has brought the documents in step (catalogChanged) is not served
	// the ones without the catalog.
	feed.failing.Store(false)
	if err := ts.catalog.Refresh(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	for _, path := range allDocuments {
		checkComplete(t, path+" after the import succeeded", getDoc(t, ts, context.Background(), http.MethodGet, path))
	}
}

// A school whose feed is down but whose store keeps the catalog last
// imported (a school built again after the platform let go of it, a
// restarted gateway) serves it at once, whole and cacheable; so does a
// school with no catalog configured, which has nothing to wait for.
func TestDocumentWithoutWaiting(t *testing.T) {
	t.Run("stored catalog", func(t *testing.T) {
		feed := newHeldSource(t, waitFeed) // never released: the feed is down
		st := openStore(t)
		if err := st.SaveCatalog(context.Background(), []byte(waitFeed)); err != nil {
			t.Fatal(err)
		}
		ts := newTestSite(t, func(c *Config) { c.Store, c.Catalog = st, feed.URL+"/catalog.json" })
		for _, path := range allDocuments {
			checkComplete(t, path, getDoc(t, ts, within(t, 5*time.Second), http.MethodGet, path))
		}
	})
	t.Run("no catalog configured", func(t *testing.T) {
		ts := newTestSite(t)
		for _, path := range allDocuments {
			rec := getDoc(t, ts, within(t, 5*time.Second), http.MethodGet, path)
			if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "public, max-age=300" {
				t.Errorf("%s: %d %q", path, rec.Code, rec.Header().Get("Cache-Control"))
			}
		}
	})
}

// /openapi.json merges the admin OpenAPI document fetched from
// admin_openapi's URL: it waits for the first fetch as the documents
// wait for the catalog (the others do not), is answered 503 past the
// bound, and after a failed fetch is served without the school's
// operations and kept by no cache.
func TestOpenAPIWaitsForTheAdminDocument(t *testing.T) {
	t.Run("fetched", func(t *testing.T) {
		admin := newHeldSource(t, string(adminDoc(1)))
		ts := newTestSite(t, func(c *Config) { c.AdminOpenAPI = admin.URL + "/openapi.json" })
		checkStarting(t, "/openapi.json", getDoc(t, ts, within(t, 50*time.Millisecond), http.MethodGet, sitepath.OpenAPI),
			"the description of its admin API")
		if rec := getDoc(t, ts, within(t, 5*time.Second), http.MethodGet, sitepath.AuthGuide); rec.Code != http.StatusOK ||
			rec.Header().Get("Cache-Control") != "public, max-age=300" {
			t.Errorf("auth.md waited for the admin document: %d %q", rec.Code, rec.Header().Get("Cache-Control"))
		}
		answer := make(chan *httptest.ResponseRecorder, 1)
		go func() { answer <- getDoc(t, ts, context.Background(), http.MethodGet, sitepath.OpenAPI) }()
		<-admin.requested
		admin.release()
		rec := <-answer
		if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "public, max-age=300" ||
			!strings.Contains(rec.Body.String(), "getCourseV1") {
			t.Errorf("/openapi.json after the first fetch: %d %q, with the school's operations: %v",
				rec.Code, rec.Header().Get("Cache-Control"), strings.Contains(rec.Body.String(), "getCourseV1"))
		}
	})
	t.Run("failed", func(t *testing.T) {
		admin := newHeldSource(t, "")
		admin.failing.Store(true)
		admin.release()
		ts := newTestSite(t, func(c *Config) { c.AdminOpenAPI = admin.URL + "/openapi.json" })
		rec := getDoc(t, ts, context.Background(), http.MethodGet, sitepath.OpenAPI)
		if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("/openapi.json after a failed first fetch: %d %q, want 200 no-store", rec.Code, rec.Header().Get("Cache-Control"))
		}
		if rec := getDoc(t, ts, context.Background(), http.MethodGet, sitepath.LLMs); rec.Header().Get("Cache-Control") != "public, max-age=300" {
			t.Errorf("llms.txt lacks nothing, yet: %q", rec.Header().Get("Cache-Control"))
		}
	})
}

// catalogDownStore is a store that does not answer for the catalog.
type catalogDownStore struct{ store.Store }

func (catalogDownStore) LoadCatalog(context.Context) ([]byte, error) {
	return nil, errors.New("database not open")
}

// A store that does not answer for the stored catalog makes the
// documents 503, not the documents of a school that sells nothing.
func TestDocumentWhenTheCatalogCannotBeRead(t *testing.T) {
	ts := newTestSite(t, func(c *Config) { c.Store = catalogDownStore{openStore(t)} })
	for _, path := range allDocuments {
		rec := getDoc(t, ts, context.Background(), http.MethodGet, path)
		checkUnavailable(t, rec)
		if rec.Header().Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: a 503 of a document is not readable cross-origin", path)
		}
	}
}
