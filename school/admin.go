package school

import (
	"context"
	"fmt"
	"time"

	"github.com/schoolgate/schoolgate/internal/source"
	"github.com/schoolgate/schoolgate/sitedocs"
)

// The school's own OpenAPI description of its admin API is merged into
// /openapi.json. One the configuration ships as a file is read with it
// (ReadAdminOpenAPI) and comes with the Config (AdminOpenAPIFile); one at
// a URL, such as the legacy server's own document, is fetched in the
// background like the catalog, and a failed or invalid fetch keeps the
// previous document serving.

// AdminOpenAPIDoc is the admin OpenAPI document as internal/source reads
// it.
var AdminOpenAPIDoc = source.Doc{What: "the admin OpenAPI document", Max: sitedocs.MaxAdminOpenAPIBytes}

// ReadAdminOpenAPI reads the admin OpenAPI file the options name, if
// they name one, and renders the documents with it: the file ships with
// the configuration, and an error in it is the configuration's. It
// returns nil for a URL, which the school fetches itself, or none.
func (o *Options) ReadAdminOpenAPI(ctx context.Context) ([]byte, error) {
	src := o.AdminOpenAPI
	if src == "" || source.IsURL(src) {
		return nil, nil
	}
	raw, err := source.Read(ctx, nil, src, AdminOpenAPIDoc)
	if err != nil {
		return nil, fmt.Errorf("admin_openapi: %v", err)
	}
	if err := CheckDocuments(Config{Options: *o, AdminOpenAPIFile: raw}); err != nil {
		return nil, fmt.Errorf("%v (admin_openapi %s)", err, src)
	}
	return raw, nil
}

// adminOpenAPIURL is the admin OpenAPI document's URL, "" when the
// options name a file or none.
func (o *Options) adminOpenAPIURL() string {
	if source.IsURL(o.AdminOpenAPI) {
		return o.AdminOpenAPI
	}
	return ""
}

// scheduleAdminOpenAPI fetches the admin OpenAPI URL on the scheduler every
// CatalogRefresh until ctx ends.
func (s *Site) scheduleAdminOpenAPI(ctx context.Context) {
	if s.adminURL == "" {
		return
	}
	first := make(chan struct{})
	s.adminFirst.Store(&first)
	delay, every := 2*firstFetchDelay, s.cfg.CatalogRefresh.D()
	s.cfg.Scheduler.Add(ctx, delay, func(ctx context.Context) time.Duration {
		delay = s.adminOpenAPIPass(ctx, delay, every)
		if ch := s.adminFirst.Swap(nil); ch != nil {
			close(*ch) // the first fetch was tried, and merged if it could be
		}
		return spread(delay, every)
	})
}

// adminFirstFetch returns a channel closed once the first fetch of
// AdminOpenAPIURL has been tried, whatever its outcome; nil when none is
// awaited (no URL, or it has been tried).
func (s *Site) adminFirstFetch() <-chan struct{} {
	if ch := s.adminFirst.Load(); ch != nil {
		return *ch
	}
	return nil
}

// adminOpenAPIPass fetches the document once and returns the wait before
// the next pass: the period after a success, a doubling retry delay after
// a failure.
func (s *Site) adminOpenAPIPass(ctx context.Context, delay, every time.Duration) time.Duration {
	raw, err := source.Read(ctx, s.client, s.adminURL, AdminOpenAPIDoc)
	if err == nil {
		err = s.useAdminOpenAPI(raw)
	}
	if err != nil {
		s.log.Error("the admin OpenAPI document was not merged, keeping the previous one",
			"issuer", s.cfg.Issuer, "from", s.adminURL, "error", err)
		return min(delay*2, every)
	}
	return every
}

// useAdminOpenAPI installs a newly read document, keeping the previous
// one if the documents cannot be rendered with it.
func (s *Site) useAdminOpenAPI(raw []byte) error {
	prev := s.adminOpenAPI.Swap(&raw)
	if err := s.checkDocs(); err != nil {
		s.adminOpenAPI.Store(prev)
		return err
	}
	return nil
}

// adminOpenAPIBytes is the current document (nil when none).
func (s *Site) adminOpenAPIBytes() []byte {
	if p := s.adminOpenAPI.Load(); p != nil {
		return *p
	}
	return nil
}
