package school

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitedocs"
	"github.com/schoolgate/schoolgate/sitepath"
)

// serveDocument answers /openapi.json, /auth.md, /llms.txt and
// /pricing.md, once what the document is rendered from is in
// (awaitDocInputs).
func (s *Site) serveDocument(w http.ResponseWriter, r *http.Request) {
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && !s.awaitDocInputs(w, r) {
		return
	}
	d, err := s.documents()
	if err != nil {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		_ = s.WriteUnavailable(w, "building the documents", err)
		return
	}
	d.ServeHTTP(w, r)
}

// awaitDocInputs waits for what the document of r is rendered from and a
// school that is starting is about to read: the first import of its
// catalog feed (every document is titled with the school's name, which
// the catalog gives, and two list what it sells) and, for /openapi.json,
// the first fetch of its admin OpenAPI URL. A school that has a catalog
// in its store, or none configured, waits for nothing. The wait is the
// one of the catalog tools of /mcp: at most firstImportWait, and no
// longer than the request. What is still loading after it is answered 503
// with Retry-After and no-store, never a document without it that a cache
// would keep; what was tried and failed is left to the documents, which
// say so and are not kept either (sitedocs.Site.CatalogUnread). It
// reports whether the document is to be served.
func (s *Site) awaitDocInputs(w http.ResponseWriter, r *http.Request) bool {
	loaded := s.catalog.Current() != nil
	if pending := s.docInputsPending(loaded, r.URL.Path); pending != nil {
		ctx, cancel := context.WithTimeout(r.Context(), firstImportWait)
		defer cancel()
		for _, ch := range pending {
			select {
			case <-ch:
			case <-ctx.Done():
			}
		}
		loaded = s.catalog.Current() != nil
		if s.docInputsPending(loaded, r.URL.Path) != nil {
			what := "its catalog"
			if loaded || s.catalog.FirstImport() == nil {
				what = "the description of its admin API"
			}
			w.Header().Set("Access-Control-Allow-Origin", "*")
			_ = WriteTemporarilyUnavailable(w, policy.RetryAfterUnavailable,
				"the school is starting and is still loading "+what+"; try again shortly")
			return false
		}
	}
	if !loaded && s.catalog.Cold() {
		// The store did not answer for the stored catalog: documents
		// without it would say the school sells nothing.
		w.Header().Set("Access-Control-Allow-Origin", "*")
		_ = s.WriteUnavailable(w, "reading the catalog", errors.New(s.catalog.LoadError()))
		return false
	}
	return true
}

// docInputsPending is what the document at path waits for, given
// whether the catalog is loaded (awaitDocInputs): nil when nothing, as
// on every request once the school has started.
func (s *Site) docInputsPending(catalogLoaded bool, path string) []<-chan struct{} {
	var pending []<-chan struct{}
	if !catalogLoaded {
		if ch := s.catalog.FirstImport(); ch != nil {
			pending = append(pending, ch)
		}
	}
	if path == sitepath.OpenAPI && s.adminOpenAPIBytes() == nil {
		if ch := s.adminFirstFetch(); ch != nil {
			pending = append(pending, ch)
		}
	}
	return pending
}

// documents returns the documents, building them on first use, and
// again when they were built without an input that has come in since
// (the first import or admin OpenAPI fetch after a failed one): the
// rebuild its arrival starts may not have run yet.
func (s *Site) documents() (*sitedocs.Set, error) {
	d := s.docs.Load()
	if d != nil && !s.docsBehind(d) {
		return d, nil
	}
	s.rebuild.Lock()
	defer s.rebuild.Unlock()
	if cur := s.docs.Load(); cur != nil && !s.docsBehind(cur) {
		return cur, nil // built by the request before
	}
	if err := s.rebuildDocsLocked(); err != nil {
		if d == nil {
			return nil, err
		}
		s.log.Error("rebuilding the documents failed, the previous ones keep serving", "issuer", s.cfg.Issuer, "error", err)
	}
	return s.docs.Load(), nil
}

// docsBehind reports whether d lacks an input the school has read since
// it was built.
func (s *Site) docsBehind(d *sitedocs.Set) bool {
	catalogUnread, adminUnread := d.Unread()
	return catalogUnread && s.catalog.Current() != nil || adminUnread && s.adminOpenAPIBytes() != nil
}

// refreshDocs rebuilds documents that exist after one of their inputs
// changed; documents never asked for are left to their first request.
// Under the rebuild lock, a first build in progress (which may have read
// the catalog before it changed) is seen as built, and rebuilt.
func (s *Site) refreshDocs() {
	s.rebuild.Lock()
	defer s.rebuild.Unlock()
	if s.docs.Load() == nil {
		return
	}
	if err := s.rebuildDocsLocked(); err != nil {
		s.log.Error("rebuilding the documents failed, the previous ones keep serving", "issuer", s.cfg.Issuer, "error", err)
	}
}

// CheckDocuments renders the documents a school of cfg would serve, with
// no catalog and no store, and reports what fails: the admin OpenAPI
// document ships with the configuration, and an error in it is the
// configuration's.
func CheckDocuments(cfg Config) error {
	_, err := sitedocs.Build(docsSite(&cfg, cfg.Policy(), cfg.Issuer, false, cfg.AdminOpenAPIFile), nil, timeNow(cfg.Now))
	return err
}

func timeNow(now func() time.Time) time.Time {
	if now == nil {
		return time.Now()
	}
	return now()
}

// docsSite is what the documents say about the school.
func docsSite(cfg *Config, p *policy.Policy, name string, mcpOn bool, adminOpenAPI []byte) sitedocs.Site {
	return sitedocs.Site{
		Issuer:                  cfg.Issuer,
		SchoolName:              name,
		AdminPrefix:             cfg.AdminPrefix,
		Scopes:                  policy.RequestableScopes,
		ProtectedResourceScopes: authserver.ProtectedResourceScopes,
		Endpoints:               docsEndpoints,
		GrantTypes:              authserver.GrantTypes(),
		MCPConnections:          mcpOn,
		DPoP:                    cfg.DPoP.String(),
		DPoPNonce:               cfg.DPoPNonce,
		AdminOpenAPI:            adminOpenAPI,
		AdminScopes:             sitedocs.PolicyScopes(p),
	}
}

// docsEndpoints are the authorization server's endpoints, from its route
// table, as the documents name them.
var docsEndpoints = func() []sitedocs.Endpoint {
	var out []sitedocs.Endpoint
	for _, e := range authserver.Endpoints() {
		out = append(out, sitedocs.Endpoint{Path: e.Path, Title: e.Title})
	}
	return out
}()

// rebuildDocs renders the documents from the configuration and the
// current catalog.
func (s *Site) rebuildDocs() error {
	s.rebuild.Lock()
	defer s.rebuild.Unlock()
	return s.rebuildDocsLocked()
}

// rebuildDocsLocked is rebuildDocs under the rebuild lock.
func (s *Site) rebuildDocsLocked() error {
	// Rebuilds run on behalf of no request (or after it has been
	// answered), so the switch is read under a deadline of their own.
	ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
	defer cancel()
	var feed *catalog.Feed
	if idx := s.catalog.Current(); idx != nil {
		feed = idx.Feed()
	}
	// Documents built as if the switch were off would tell clients that
	// member applications are unavailable; the previous ones keep serving
	// until the next rebuild reads it.
	mcpOn, err := s.as.MCPConnectionsEnabled(ctx)
	if err != nil {
		return fmt.Errorf("documents: reading the MCP connections switch: %w", storeFailure{err})
	}
	site := docsSite(&s.cfg, s.policy, s.schoolName(), mcpOn, s.adminOpenAPIBytes())
	// Built without what the school has but could not read yet, the
	// documents are served so that no cache keeps them.
	site.CatalogUnread = s.cfg.Catalog != "" && feed == nil
	site.AdminOpenAPIUnread = s.adminURL != "" && site.AdminOpenAPI == nil
	set, err := sitedocs.Build(site, feed, s.now())
	if err != nil {
		return fmt.Errorf("documents: %v", err)
	}
	s.docs.Store(set)
	return nil
}

// checkDocs rebuilds the documents with the current inputs, or, before
// their first request, renders what can fail (the admin document) and
// keeps nothing.
func (s *Site) checkDocs() error {
	// Under the rebuild lock, a first build in progress (which may have
	// read the inputs before they changed) is seen as built, and rebuilt.
	s.rebuild.Lock()
	if s.docs.Load() == nil {
		defer s.rebuild.Unlock()
		_, err := sitedocs.Build(docsSite(&s.cfg, s.policy, s.cfg.Issuer, false, s.adminOpenAPIBytes()), nil, s.now())
		return err
	}
	s.rebuild.Unlock()
	return s.rebuildDocs()
}
