package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/mcpserver"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitedocs"
	"github.com/schoolgate/schoolgate/sitepath"
)

// siteExtras are the parts of a school beside the authorization server:
// its catalog, MCP server and generated documents. Each is built on its
// first use, not when the school starts: a school nobody asks about costs
// its configuration, its open store and its keys, nothing more.
type siteExtras struct {
	catalog *catalog.Manager
	// mcp is the MCP server, built by the first /mcp request (mcpHandler)
	// and again after the school's name changed (renameMCP); mcpBuild
	// serializes that build, never a request that finds it built.
	mcp      atomic.Pointer[builtMCP]
	mcpBuild sync.Mutex
	// docs are the documents, built by the first request for one of them
	// and rebuilt when their inputs change once they exist (documents).
	docs atomic.Pointer[sitedocs.Set]
	logf func(string, ...any)
	// adminOpenAPI is the school's admin API description (adminopenapi.go).
	adminOpenAPI atomic.Pointer[[]byte]
	// refreshed is when the catalog feed was last fetched and imported.
	refreshed atomic.Pointer[time.Time]
	// catalogErr is why the last import of the feed failed; nil after a
	// success.
	catalogErr atomic.Pointer[importFailure]
	// rebuild serializes rebuildDocs: the catalog loop, the admin OpenAPI
	// loop and the admin API rebuild concurrently, and a build from older
	// inputs must not be stored over one from newer inputs.
	rebuild sync.Mutex
}

func (s *site) provisionExtras(ctx caddy.Context, life context.Context) error {
	logger := ctx.Slogger()
	s.extras.logf = func(format string, args ...any) { logger.Info(fmt.Sprintf(format, args...)) }
	s.extras.catalog = catalog.NewManager(s.gateway.Issuer, s.store)
	s.extras.catalog.LoadLazily()
	if s.gateway.Catalog != "" {
		s.extras.catalog.ExpectImport() // startExtras runs it
	}
	if src := s.gateway.AdminOpenAPI; src != "" && !isURL(src) {
		raw, err := s.readAdminOpenAPI(ctx)
		if err != nil {
			return fmt.Errorf("admin_openapi: %v", err)
		}
		s.extras.adminOpenAPI.Store(&raw)
		// A bad document fails the load now, not the first request for
		// /openapi.json.
		if _, err := sitedocs.Build(s.docsSite(s.gateway.Issuer, false), nil, time.Now()); err != nil {
			return fmt.Errorf("%v (admin_openapi %s)", err, src)
		}
	}
	s.followStore(life)
	return nil
}

// builtMCP is a built MCP server and the school name it tells agents.
type builtMCP struct {
	handler http.Handler
	name    string
}

// mcpHandler returns the MCP server, building it on the first request.
func (s *site) mcpHandler() (http.Handler, error) {
	if b := s.extras.mcp.Load(); b != nil {
		return b.handler, nil
	}
	s.extras.mcpBuild.Lock()
	defer s.extras.mcpBuild.Unlock()
	if b := s.extras.mcp.Load(); b != nil {
		return b.handler, nil
	}
	name := s.schoolName()
	mcp, err := mcpserver.New(mcpserver.Options{
		SiteName:            name,
		Origin:              s.gateway.Issuer,
		ResourceMetadataURL: s.as.ResourceMetadataURL(),
		Catalog:             s.awaitCatalog,
		Account:             s.accountQuery,
		Logger:              s.log(),
	})
	if err != nil {
		return nil, fmt.Errorf("mcp: %v", err)
	}
	s.extras.mcp.Store(&builtMCP{handler: mcp, name: name})
	return mcp, nil
}

// renameMCP drops an MCP server built under another name than the
// school's, so that the next request builds one that greets agents with
// the right name: a first request before the first catalog import names
// the school by its origin. The server keeps no session (see mcpserver.New),
// so requests under way finish on the old one and nothing is lost.
func (s *site) renameMCP() {
	if b := s.extras.mcp.Load(); b != nil && b.name != s.schoolName() {
		s.extras.mcp.CompareAndSwap(b, nil)
	}
}

// catalogChanged brings what is built from the catalog in step with a
// new one.
func (s *site) catalogChanged() {
	s.refreshDocs()
	s.renameMCP()
}

// awaitCatalog is the MCP server's catalog: on a school whose store has
// no feed yet, an agent that calls a catalog tool in the first moments
// after start-up waits for the first import instead of being told to come
// back in a minute.
func (s *site) awaitCatalog(ctx context.Context) *catalog.Index {
	return s.extras.catalog.Await(ctx, firstImportWait)
}

// firstImportWait bounds that wait: a feed that takes longer (or an
// upstream that is not up yet) gets the "not loaded yet" tool error.
const firstImportWait = 10 * time.Second

// followStore keeps the catalog and documents in step with the other
// instances of the site when its store is shared: a catalog one of them
// imported is loaded here, and a switched setting shows in the documents.
// It stops with the config.
func (s *site) followStore(ctx context.Context) {
	w, ok := s.store.(authserver.Watcher)
	if !ok {
		return
	}
	context.AfterFunc(ctx, w.Watch(s.storeChanged))
}

// storeChanged applies one change; it runs on the store's watcher.
func (s *site) storeChanged(c authserver.Change) {
	newCatalog := false
	if c == authserver.ChangeCatalog || c == authserver.ChangeAll {
		ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
		changed, err := s.extras.catalog.Reload(ctx)
		cancel()
		if err != nil {
			s.extras.logf("loading the catalog another instance stored: %v", err)
		}
		newCatalog = changed
	}
	switch {
	case newCatalog:
		s.catalogChanged() // the documents included
	case c == authserver.ChangeSettings || c == authserver.ChangeAll:
		s.refreshDocs()
	}
}

// schoolName is what the school is called: its catalog's name, else its
// origin. The documents, the MCP server and the consent page use it.
func (s *site) schoolName() string {
	if idx := s.extras.catalog.Current(); idx != nil {
		// The feed is the legacy site's word: one clean line, so that no
		// control or bidi character reorders what the consent page shows.
		if name := sitedocs.PlainLine(idx.Feed().School.Name, 120); name != "" {
			return name
		}
	}
	return s.gateway.Issuer
}

// documents returns the documents, building them on first use.
func (s *site) documents() (*sitedocs.Set, error) {
	if d := s.extras.docs.Load(); d != nil {
		return d, nil
	}
	if err := s.rebuildDocs(); err != nil {
		return nil, err
	}
	return s.extras.docs.Load(), nil
}

// refreshDocs rebuilds documents that exist after one of their inputs
// changed; documents never asked for are left to their first request.
func (s *site) refreshDocs() {
	if s.extras.docs.Load() == nil {
		return
	}
	if err := s.rebuildDocs(); err != nil {
		s.extras.logf("rebuilding documents: %v", err)
	}
}

// docsSite is what the documents say about the school.
func (s *site) docsSite(name string, mcpOn bool) sitedocs.Site {
	return sitedocs.Site{
		Issuer:                  s.gateway.Issuer,
		SchoolName:              name,
		AdminPrefix:             s.gateway.AdminPrefix,
		Scopes:                  policy.RequestableScopes,
		ProtectedResourceScopes: authserver.ProtectedResourceScopes,
		MCPConnections:          mcpOn,
		AdminOpenAPI:            s.adminOpenAPIBytes(),
		AdminScopes:             sitedocs.PolicyScopes(s.policy),
	}
}

// rebuildDocs renders the documents from the configuration and the
// current catalog.
func (s *site) rebuildDocs() error {
	// Rebuilds run on behalf of no request (or after it has been
	// answered), so the switch is read under a deadline of their own.
	ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
	defer cancel()
	s.extras.rebuild.Lock()
	defer s.extras.rebuild.Unlock()
	var feed *catalog.Feed
	if idx := s.extras.catalog.Current(); idx != nil {
		feed = idx.Feed()
	}
	// Documents built as if the switch were off would tell clients that
	// member applications are unavailable; the previous ones keep serving
	// until the next rebuild reads it.
	mcpOn, err := s.as.MCPConnectionsEnabled(ctx)
	if err != nil {
		return fmt.Errorf("documents: reading the MCP connections switch: %w", storeFailure{err})
	}
	set, err := sitedocs.Build(s.docsSite(s.schoolName(), mcpOn), feed, time.Now())
	if err != nil {
		return fmt.Errorf("documents: %v", err)
	}
	s.extras.docs.Store(set)
	return nil
}

// startExtras schedules the refreshes of what comes from the school: the
// catalog and an admin OpenAPI document given as a URL. They run on the
// shared scheduler until ctx ends.
func (s *site) startExtras(ctx context.Context) {
	every := time.Duration(s.gateway.CatalogRefresh)
	if every <= 0 {
		every = 10 * time.Minute
	}
	if src := s.gateway.Catalog; src != "" {
		// The first import retries quickly: the upstream serving the feed
		// may start after the gateway.
		delay := 500 * time.Millisecond
		background.Add(ctx, delay, func(ctx context.Context) time.Duration {
			if delay < every || s.claimRun(ctx, "catalog", every) {
				delay = s.catalogPass(ctx, src, delay, every)
			}
			return spread(delay, every)
		})
	}
	if isURL(s.gateway.AdminOpenAPI) {
		delay := time.Second
		background.Add(ctx, delay, func(ctx context.Context) time.Duration {
			delay = s.adminOpenAPIPass(ctx, delay, every)
			return spread(delay, every)
		})
	}
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
func (s *site) catalogPass(ctx context.Context, src string, delay, every time.Duration) time.Duration {
	if err := s.refreshCatalogOnce(ctx, src); err != nil {
		s.extras.logf("catalog import from %s failed, keeping the previous catalog: %v", src, err)
		s.extras.catalogErr.Store(&importFailure{msg: err.Error(), storing: errors.Is(err, catalog.ErrNotStored)})
		return min(delay*2, every)
	}
	now := time.Now().UTC()
	s.extras.refreshed.Store(&now)
	s.extras.catalogErr.Store(nil)
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
func (s *site) refreshCatalogOnce(ctx context.Context, src string) error {
	ctx, cancel := context.WithTimeout(ctx, catalogRefreshTimeout)
	defer cancel()
	return s.extras.catalog.Refresh(ctx, src)
}

// catalogRefreshTimeout bounds one fetch and import of the catalog.
const catalogRefreshTimeout = time.Minute

// claimRun reports whether this instance does a periodic job now: with a
// shared store, one instance of the site per period does (the others load
// what it stores when it is announced); otherwise this one always does.
// Retries after a failure claim nothing, so a failed fetch is not left
// for a whole period.
func (s *site) claimRun(ctx context.Context, job string, every time.Duration) bool {
	sch, ok := s.store.(authserver.Scheduler)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	mine, err := sch.ClaimRun(ctx, job, every)
	if err != nil {
		s.extras.logf("claiming the %s refresh: %v", job, err)
	}
	return mine
}

// serveExtras answers /mcp and the documents.
func (s *site) serveExtras(w http.ResponseWriter, r *http.Request) bool {
	path := r.URL.Path
	if sitepath.IsMCP(path) {
		s.serveMCP(w, r)
		return true
	}
	if !sitepath.IsDocument(path) {
		return false
	}
	d, err := s.documents()
	if err != nil {
		_ = s.writeUnavailable(w, "building the documents", err)
		return true
	}
	d.ServeHTTP(w, r)
	return true
}

// serveMCP serves /mcp: anonymous without a token, with the member's
// identity for a valid member token, and a challenge for any token that is
// not valid here (never a silent fall back to anonymous).
func (s *site) serveMCP(w http.ResponseWriter, r *http.Request) {
	mcp, err := s.mcpHandler()
	if err != nil {
		_ = s.writeUnavailable(w, "starting the MCP server", err)
		return
	}
	if r.Header.Get("Authorization") == "" || r.Method == http.MethodOptions {
		s.observe.mcpCaller("anonymous")
		mcp.ServeHTTP(w, r)
		return
	}
	tok, ch := policy.Check(r.Context(), s.as, r, policy.Requirement{}, s.as.Issuer())
	if ch != nil {
		s.observe.mcpCaller("refused")
		ch.ResourceMetadata = s.as.ResourceMetadataURL()
		ch.Write(w)
		return
	}
	r.Header.Del("Authorization")
	s.observe.mcpCaller(tok.Audience)
	if tok.Audience == authserver.AudienceMember {
		r = r.WithContext(mcpserver.WithIdentity(r.Context(), tok))
	}
	mcp.ServeHTTP(w, r)
}

// accountQuery runs a member's GraphQL query at the upstream Account API
// with the identity headers of the member's validated token (and its
// identity assertion, when on); the client's token never leaves the
// gateway. Without a validated token no call is made.
func (s *site) accountQuery(ctx context.Context, tok *policy.Token, query string, variables map[string]any) (json.RawMessage, error) {
	if tok == nil {
		return nil, errors.New("the Account API is called only for a member's validated token")
	}
	body, err := json.Marshal(map[string]any{"query": query, "variables": variables})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.gateway.Upstream+sitepath.Account, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = identityHeaderValues(tok)
	if err := s.setAssertion(req.Header, tok); err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.upstream.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the school's Account API is unreachable")
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || !json.Valid(raw) {
		return nil, fmt.Errorf("the school's Account API answered %d: %s", resp.StatusCode,
			strings.TrimSpace(string(raw[:min(len(raw), 200)])))
	}
	return raw, nil
}
