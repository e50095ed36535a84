package school

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"golang.org/x/text/language"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/i18n"
	"github.com/schoolgate/schoolgate/sitedocs"
	"github.com/schoolgate/schoolgate/store"
)

// catalogRefreshTimeout bounds one fetch and import of the catalog.
const catalogRefreshTimeout = time.Minute

// firstFetchDelay is the wait before a school's first fetch of its feed,
// and half the wait before that of its admin OpenAPI document: the
// upstream serving them may start after the gateway. A variable for
// tests, whose upstreams are up first.
var firstFetchDelay = 500 * time.Millisecond

// scheduleCatalog imports the feed on the scheduler every CatalogRefresh
// until ctx ends. The first import retries quickly: the upstream serving
// the feed may start after the gateway.
func (s *Site) scheduleCatalog(ctx context.Context) {
	src, every := s.cfg.Catalog, s.cfg.CatalogRefresh.D()
	if src == "" {
		return
	}
	delay := firstFetchDelay
	s.cfg.Scheduler.Add(ctx, delay, func(ctx context.Context) time.Duration {
		if delay < every || s.claimRun(ctx, "catalog", every) {
			delay = s.catalogPass(ctx, src, delay, every)
		}
		return spread(delay, every)
	})
}

// spread moves a full period by up to a tenth either way, so that schools
// started together drift apart instead of fetching their feeds in the same
// second every period; retries are left as they are.
func spread(delay, every time.Duration) time.Duration {
	if delay < every {
		return delay
	}
	return delay - every/10 + rand.N(every/5+1)
}

// catalogPass imports the feed once and returns the wait before the next
// pass: the period after a success, a doubling retry delay after a failure.
func (s *Site) catalogPass(ctx context.Context, src string, delay, every time.Duration) time.Duration {
	if err := s.refreshCatalogOnce(ctx, src); err != nil {
		s.log.Error("catalog import failed, keeping the previous catalog", "issuer", s.cfg.Issuer, "from", src, "error", err)
		s.catalogErr.Store(&importFailure{msg: err.Error(), storing: errors.Is(err, catalog.ErrNotStored)})
		return min(delay*2, every)
	}
	now := s.now().UTC()
	s.refreshed.Store(&now)
	s.catalogErr.Store(nil)
	s.catalogChanged()
	return every
}

// importFailure is why the last catalog import failed: the feed (it could
// not be fetched or is invalid) or the store (it did not keep the feed,
// which the store's own health check reports).
type importFailure struct {
	msg     string
	storing bool
}

// refreshCatalogOnce fetches and imports the feed under a deadline of its
// own, the store's write included.
func (s *Site) refreshCatalogOnce(ctx context.Context, src string) error {
	ctx, cancel := context.WithTimeout(ctx, catalogRefreshTimeout)
	defer cancel()
	return s.catalog.Refresh(ctx, src)
}

// claimRun reports whether this instance does a periodic job now: with a
// shared store, one instance of the site per period does (the others load
// what it stores when it is announced); otherwise this one always does.
// Retries after a failure claim nothing, so a failed fetch is not left
// for a whole period.
func (s *Site) claimRun(ctx context.Context, job string, every time.Duration) bool {
	sch, ok := s.cfg.Store.(store.Scheduler)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	mine, err := sch.ClaimRun(ctx, job, every)
	if err != nil {
		s.log.Error("claiming a periodic job in the store failed", "issuer", s.cfg.Issuer, "job", job, "error", err)
	}
	return mine
}

// catalogChanged brings what is built from the catalog in step with a
// new one.
func (s *Site) catalogChanged() {
	s.refreshDocs()
	s.renameMCP()
}

// ImportCatalog imports the configured catalog feed now, as an operator
// asks for. An error wrapping catalog.ErrNotStored is the store's; any
// other is the feed's, and the previous catalog keeps serving. After a
// success, CatalogImported brings the documents and the MCP server in step.
func (s *Site) ImportCatalog(ctx context.Context) error {
	if s.cfg.Catalog == "" {
		return errors.New("no catalog feed is configured")
	}
	return s.catalog.Refresh(ctx, s.cfg.Catalog)
}

// CatalogImported rebuilds what is built from the catalog after an
// ImportCatalog. An error for which IsStoreFailure holds is the store's.
func (s *Site) CatalogImported() error {
	if err := s.checkDocs(); err != nil {
		return err
	}
	s.renameMCP()
	return nil
}

// followStore keeps the catalog and documents in step with the other
// instances of the site when its store is shared: a catalog one of them
// imported is loaded here, and a switched setting shows in the documents.
// It stops when ctx ends.
func (s *Site) followStore(ctx context.Context) {
	w, ok := s.cfg.Store.(store.Watcher)
	if !ok {
		return
	}
	context.AfterFunc(ctx, w.Watch(s.storeChanged))
}

// storeChanged applies one change; it runs on the store's watcher.
func (s *Site) storeChanged(c store.Change) {
	newCatalog := false
	if c == store.ChangeCatalog || c == store.ChangeAll {
		ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
		changed, err := s.catalog.Reload(ctx)
		cancel()
		if err != nil {
			s.log.Error("loading the catalog another instance stored failed", "issuer", s.cfg.Issuer, "error", err)
		}
		newCatalog = changed
	}
	switch {
	case newCatalog:
		s.catalogChanged() // the documents included
	case c == store.ChangeSettings || c == store.ChangeAll:
		s.refreshDocs()
	}
}

// schoolName is what the school is called: its catalog's name, else its
// origin. The documents, the MCP server and the consent page use it.
func (s *Site) schoolName() string {
	if idx := s.catalog.Current(); idx != nil {
		// The feed is the legacy site's word: one clean line, so that no
		// control or bidi character reorders what the consent page shows.
		if name := sitedocs.PlainLine(idx.Feed().School.Name, 120); name != "" {
			return name
		}
	}
	return s.cfg.Issuer
}

// schoolLanguage is the language of the school's pages for a browser
// that asks for none they are written in: the configured one, else the
// catalog feed's (its base language: "de-CH" is "de"), else English.
// It reads the catalog only when loaded: an error page must not load a
// cold school's catalog (a scanner would make every school's resident);
// the consent and applications pages have loaded it for the school's
// name by the time they ask.
func (s *Site) schoolLanguage() string {
	if s.cfg.Language != "" {
		return s.cfg.Language
	}
	if idx := s.catalog.Loaded(); idx != nil {
		if tag, err := language.Parse(idx.Feed().Language); err == nil {
			if base, _ := tag.Base(); i18n.IsLanguage(base.String()) {
				return base.String()
			}
		}
	}
	return i18n.Languages[0]
}

// CatalogFrom is the catalog feed's file or URL, "" when none is
// configured.
func (s *Site) CatalogFrom() string { return s.cfg.Catalog }

// CatalogRefreshed is when the feed was last fetched and imported by the
// schedule; nil before.
func (s *Site) CatalogRefreshed() *time.Time { return s.refreshed.Load() }

// Courses is the number of courses of the newest feed seen, 0 before one.
func (s *Site) Courses() int { return max(s.catalog.Courses(), 0) }
