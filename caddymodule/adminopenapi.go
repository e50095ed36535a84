package caddymodule

import (
	"context"
	"time"

	"github.com/schoolgate/schoolgate/internal/source"
	"github.com/schoolgate/schoolgate/sitedocs"
)

// The school's own OpenAPI description of its admin API (option
// admin_openapi: a file, or an http(s) URL such as the legacy server's
// own document) is merged into /openapi.json. A file is read when the
// config loads, so a broken one fails the load with the reason; a URL is
// fetched in the background like the catalog, and a failed or invalid
// fetch keeps the previous document serving.

// adminOpenAPIDoc is the document as internal/source reads it.
var adminOpenAPIDoc = source.Doc{What: "the admin OpenAPI document", Max: sitedocs.MaxAdminOpenAPIBytes}

// isURL reports whether src is an http(s) URL rather than a file path.
func isURL(src string) bool { return source.IsURL(src) }

// readAdminOpenAPI returns the document's bytes, capped.
func (s *site) readAdminOpenAPI(ctx context.Context) ([]byte, error) {
	return source.Read(ctx, s.upstream, s.gateway.AdminOpenAPI, adminOpenAPIDoc)
}

// useAdminOpenAPI installs a newly read document, keeping the previous
// one if the documents cannot be rendered with it.
func (s *site) useAdminOpenAPI(raw []byte) error {
	prev := s.extras.adminOpenAPI.Swap(&raw)
	if err := s.checkDocs(); err != nil {
		s.extras.adminOpenAPI.Store(prev)
		return err
	}
	return nil
}

// checkDocs rebuilds the documents with the current inputs, or, before
// their first request, renders what can fail (the admin document) and
// keeps nothing.
func (s *site) checkDocs() error {
	// Under the rebuild lock, a first build in progress (which may have
	// read the inputs before they changed) is seen as built, and rebuilt.
	s.extras.rebuild.Lock()
	if s.extras.docs.Load() == nil {
		defer s.extras.rebuild.Unlock()
		_, err := sitedocs.Build(s.docsSite(s.gateway.Issuer, false), nil, time.Now())
		return err
	}
	s.extras.rebuild.Unlock()
	return s.rebuildDocs()
}

// adminOpenAPIBytes is the current document (nil when none).
func (s *site) adminOpenAPIBytes() []byte {
	if p := s.extras.adminOpenAPI.Load(); p != nil {
		return *p
	}
	return nil
}

// adminOpenAPIPass fetches the document once and returns the wait before
// the next pass: the period after a success, a doubling retry delay after
// a failure.
func (s *site) adminOpenAPIPass(ctx context.Context, delay, every time.Duration) time.Duration {
	raw, err := s.readAdminOpenAPI(ctx)
	if err == nil {
		err = s.useAdminOpenAPI(raw)
	}
	if err != nil {
		s.extras.logf("admin OpenAPI document %s not merged, keeping the previous one: %v", s.gateway.AdminOpenAPI, err)
		return min(delay*2, every)
	}
	return every
}
