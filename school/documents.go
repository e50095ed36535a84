package school

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitedocs"
)

// serveDocument answers /openapi.json, /auth.md, /llms.txt and
// /pricing.md.
func (s *Site) serveDocument(w http.ResponseWriter, r *http.Request) {
	d, err := s.documents()
	if err != nil {
		_ = s.WriteUnavailable(w, "building the documents", err)
		return
	}
	d.ServeHTTP(w, r)
}

// documents returns the documents, building them on first use.
func (s *Site) documents() (*sitedocs.Set, error) {
	if d := s.docs.Load(); d != nil {
		return d, nil
	}
	if err := s.rebuildDocs(); err != nil {
		return nil, err
	}
	return s.docs.Load(), nil
}

// refreshDocs rebuilds documents that exist after one of their inputs
// changed; documents never asked for are left to their first request.
func (s *Site) refreshDocs() {
	if s.docs.Load() == nil {
		return
	}
	if err := s.rebuildDocs(); err != nil {
		s.log.Error("rebuilding the documents failed, the previous ones keep serving", "issuer", s.cfg.Issuer, "error", err)
	}
}

// CheckDocuments renders the documents a school of cfg would serve, with
// no catalog and no store, and reports what fails: the admin OpenAPI
// document ships with the configuration, and an error in it is the
// configuration's.
func CheckDocuments(cfg Config) error {
	p := &policy.Policy{AdminPrefix: cfg.AdminPrefix, Rules: cfg.Rules}
	_, err := sitedocs.Build(docsSite(&cfg, p, cfg.Issuer, false, cfg.AdminOpenAPI), nil, timeNow(cfg.Now))
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
		MCPConnections:          mcpOn,
		AdminOpenAPI:            adminOpenAPI,
		AdminScopes:             sitedocs.PolicyScopes(p),
	}
}

// rebuildDocs renders the documents from the configuration and the
// current catalog.
func (s *Site) rebuildDocs() error {
	// Rebuilds run on behalf of no request (or after it has been
	// answered), so the switch is read under a deadline of their own.
	ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
	defer cancel()
	s.rebuild.Lock()
	defer s.rebuild.Unlock()
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
	set, err := sitedocs.Build(docsSite(&s.cfg, s.policy, s.schoolName(), mcpOn, s.adminOpenAPIBytes()), feed, s.now())
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
