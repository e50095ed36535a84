package caddymodule

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/schoolgate/schoolgate/sitedocs"
)

// The school's own OpenAPI description of its admin API (option
// admin_openapi: a file, or an http(s) URL such as the legacy server's
// own document) is merged into /openapi.json. A file is read when the
// config loads, so a broken one fails the load with the reason; a URL is
// fetched in the background like the catalog, and a failed or invalid
// fetch keeps the previous document serving.

// isURL reports whether src is an http(s) URL rather than a file path.
func isURL(src string) bool {
	u, err := url.Parse(src)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// readAdminOpenAPI returns the document's bytes, capped.
func (s *site) readAdminOpenAPI(ctx context.Context) ([]byte, error) {
	src := s.gateway.AdminOpenAPI
	var r io.Reader
	if isURL(src) {
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := s.upstream.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s answered %s", src, resp.Status)
		}
		r = resp.Body
	} else {
		f, err := os.Open(src)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, sitedocs.MaxAdminOpenAPIBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > sitedocs.MaxAdminOpenAPIBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", src, sitedocs.MaxAdminOpenAPIBytes)
	}
	return raw, nil
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
