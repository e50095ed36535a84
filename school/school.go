// Package school is one school's gateway without Caddy: the routing of a
// request (the authorization server's endpoints, protected resources with
// their policy and challenges, /mcp, the documents, the identity headers
// and the identity assertion), the MCP server, the documents, and the
// school's periodic work (expiry purges, catalog and admin OpenAPI
// refreshes). A Site is built from a plain Config; caddymodule builds one
// per site block and hands it Caddy's reverse proxy to the legacy server
// as the next handler.
package school

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schoolgate/schoolgate/admission"
	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/internal/schedule"
	"github.com/schoolgate/schoolgate/option"
	"github.com/schoolgate/schoolgate/pages"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitedocs"
	"github.com/schoolgate/schoolgate/store"
)

// Config is what a school is built from: its Options, declared once,
// and what is opened or shared for it when it is built: its store, the
// process's logger, metrics, scheduler and fair share.
type Config struct {
	Options
	// AdminOpenAPIFile is the content of the file Options.AdminOpenAPI
	// names, read with the configuration (ReadAdminOpenAPI); nil when it
	// names a URL, which the school fetches itself, or nothing.
	AdminOpenAPIFile []byte

	// AuditLogger receives the audit events; nil is Logger.
	AuditLogger *slog.Logger
	// RequestID names a request in its audit events; nil names none.
	RequestID func(*http.Request) string
	// Admission is the school's handle on the instance's fair share,
	// made with Weight (package admission). Default: none, every request
	// admitted at once.
	Admission *admission.School
	// Instances is how many instances serve the school now, each taking
	// its part of the budget; counted in the background. Default: one.
	Instances func() int

	// Store is the school's opened store; the school does not close it.
	// Required.
	Store store.Store
	// Client makes the school's calls to the upstream, each within the
	// school's legacy bound (Budget), the session lookup in at most 5 s.
	// Default: a client with a 15 s timeout that does not follow
	// redirects.
	Client *http.Client
	// ClientIP is the caller's address, for the rate limits. Default: the
	// request's RemoteAddr.
	ClientIP func(*http.Request) string
	// Identified, when set, is called with a protected request about to be
	// forwarded and its identity, whose values are those of
	// IdentityHeaders (caddymodule makes them placeholders). It must not
	// keep the identity past the request.
	Identified func(r *http.Request, id Identity)
	// Observer counts the school's events. Default: none.
	Observer Observer
	// Logger receives the school's operational messages. Default:
	// slog.Default().
	Logger *slog.Logger
	// Scheduler runs the school's periodic work, shared by every school
	// of the process. Required.
	Scheduler *schedule.Scheduler
	// Now is the clock. Default: time.Now.
	Now func() time.Time
}

// Observer counts a school's events: the authorization server's, and the
// outcomes of protected requests and /mcp calls.
type Observer interface {
	authserver.Observer
	// ProtectedOutcome counts a request to a protected resource by
	// outcome: allowed, denied_by_policy, path_refused, or the challenge's
	// error code.
	ProtectedOutcome(outcome string)
	// MCPCaller counts a request to /mcp by caller: anonymous, member,
	// operator or refused.
	MCPCaller(caller string)
	// Refusal counts a request the gateway answered itself for want of
	// capacity, the instance's, the school's or its legacy server's, by
	// cause (store.Cause): fair_share (503: it waited past its turn on
	// the instance, or its school's queue was full), budget_requests and
	// budget_mcp_anonymous (429: the school's budget is spent),
	// mcp_anonymous_address (429: the anonymous /mcp limit of the
	// caller's address), legacy_busy (503) and legacy_timeout (504). A
	// call of the school's own refused alike (session lookup, the MCP
	// tools' Account API) counts too.
	Refusal(cause store.Cause)
}

// Handler is the next handler of a request the school does not answer
// itself: the reverse proxy to the legacy server. caddyhttp.Handler is
// one.
type Handler interface {
	ServeHTTP(http.ResponseWriter, *http.Request) error
}

// StatusError is a request the school refuses with Status and no body of
// its own, for the caller's error handling to answer (Caddy's does).
type StatusError struct {
	Status int
	Err    error
}

func (e *StatusError) Error() string { return e.Err.Error() }
func (e *StatusError) Unwrap() error { return e.Err }

const (
	// janitorEvery is how often each school's expired records are purged.
	janitorEvery = 10 * time.Minute
	// defaultRefresh is how often the catalog and an admin OpenAPI URL
	// are read again.
	defaultRefresh = 10 * time.Minute
	// storeCallTimeout bounds a store call made on behalf of no request.
	storeCallTimeout = 5 * time.Second
)

// Site is one school. Its catalog, MCP server and documents are built on
// their first use, not when the school is: a school nobody asks about
// costs its configuration, its open store and its keys, nothing more.
type Site struct {
	cfg     Config
	as      *authserver.Server
	policy  *policy.Policy
	observe Observer
	// client makes the school's own calls to its legacy side and
	// session its session lookups, both within legacy, the bound of the
	// school's requests to its legacy server (legacy.go).
	client  *http.Client
	session *http.Client
	legacy  *Legacy
	log     *slog.Logger
	now     func() time.Time
	// since is when the school was built.
	since time.Time

	// budget is the school's own limits (admit.go).
	budget budgets
	// adminURL is the admin OpenAPI document's URL, fetched every
	// CatalogRefresh; "" when the document is a file or none (admin.go).
	adminURL string
	// assertionAudience is the audience of the identity assertion, ""
	// when none is signed; assertionOnly forwards the assertion alone,
	// without the plain X-School-* identity headers: one header to
	// encode per request instead of nine (identity.go).
	assertionAudience string
	assertionOnly     bool

	catalog *catalog.Manager
	// mcp is the MCP server, built by the first /mcp request (mcpHandler)
	// and again after the school's name changed (renameMCP); mcpBuild
	// serializes that build, never a request that finds it built.
	mcp      atomic.Pointer[builtMCP]
	mcpBuild sync.Mutex
	// docs are the documents, built by the first request for one of them
	// and rebuilt when their inputs change once they exist (documents).
	docs atomic.Pointer[sitedocs.Set]
	// adminOpenAPI is the school's admin API description (admin.go).
	adminOpenAPI atomic.Pointer[[]byte]
	// adminFirst is closed once the first fetch of AdminOpenAPIURL has
	// been tried; nil when none is awaited (admin.go).
	adminFirst atomic.Pointer[chan struct{}]
	// refreshed is when the catalog feed was last fetched and imported.
	refreshed atomic.Pointer[time.Time]
	// catalogErr is why the last import of the feed failed; nil after a
	// success.
	catalogErr atomic.Pointer[importFailure]
	// rebuild serializes rebuildDocs: the catalog loop, the admin OpenAPI
	// loop and an operator's refresh rebuild concurrently, and a build
	// from older inputs must not be stored over one from newer inputs.
	rebuild sync.Mutex
	// usage is what the school served, on its way to the store
	// (usagesite.go).
	usage usage
}

// New builds the school: its authorization server (which reads or makes
// its keys in the store) and its policy, and schedules its periodic work,
// which runs until ctx ends. A *BuildError is the store's data failing; any
// other error is the configuration's.
func New(ctx context.Context, cfg Config) (*Site, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.defaults()
	s := &Site{cfg: cfg, log: cfg.Logger, now: cfg.Now, policy: cfg.Policy(),
		adminURL: cfg.adminOpenAPIURL(), assertionAudience: cfg.assertionAudience(), assertionOnly: cfg.assertionOnly()}
	s.observe = &usageObserver{Observer: cfg.Observer, u: &s.usage.rec, now: cfg.Now}
	s.legacy = NewLegacy(cfg.LegacyConcurrency(), s.observe)
	s.client, s.session = legacyClients(cfg.Client, s.legacy, cfg.Observer, cfg.Issuer)
	s.since = s.now().UTC()
	s.budget = newBudgets(cfg.Budget, cfg.Instances)
	var err error
	s.as, err = authserver.New(ctx, authserver.Config{
		Options:       cfg.Options.Options,
		Issuer:        cfg.Issuer,
		SessionURL:    cfg.upstreamURL(cfg.SessionURL),
		LoginURL:      cfg.LoginURL,
		AdminPrefix:   cfg.AdminPrefix,
		AuditLogger:   cfg.AuditLogger,
		RequestID:     cfg.RequestID,
		SessionClient: s.session,
		ClientIP:      cfg.ClientIP,
		Observer:      s.observe,
		Logger:        s.log,
		Now:           s.now,
		Pages: func(as *authserver.Server) authserver.Pages {
			return pages.New(as, pages.Config{SchoolName: s.schoolName, SchoolLanguage: s.schoolLanguage,
				Usage: s.Usage, Logger: s.log, Now: s.now})
		},
	}, cfg.Store)
	if err != nil {
		return nil, &BuildError{Reason: "its signing keys and settings could not be read from its store",
			Err: fmt.Errorf("school %s: %v", cfg.Issuer, err)}
	}
	s.catalog = catalog.NewManager(cfg.Issuer, cfg.Store)
	s.catalog.LoadLazily()
	if cfg.Catalog != "" {
		s.catalog.ExpectImport() // the first catalog pass runs it
	}
	if cfg.AdminOpenAPIFile != nil {
		raw := cfg.AdminOpenAPIFile
		s.adminOpenAPI.Store(&raw)
		// A bad document fails the build now, not the first request for
		// /openapi.json.
		if err := CheckDocuments(cfg); err != nil {
			return nil, err
		}
	}
	s.followStore(ctx)
	s.schedule(ctx)
	return s, nil
}

// check refuses a Config that New cannot build from: its options, as
// Options.Check refuses them, or what it is built with.
func (c *Config) check() error {
	switch {
	case c.Issuer == "":
		return errors.New("issuer: is required")
	case c.Store == nil:
		return errors.New("school: Store is required")
	case c.Scheduler == nil:
		return errors.New("school: Scheduler is required")
	}
	return c.Options.Check()
}

func (c *Config) defaults() {
	if c.CatalogRefresh <= 0 {
		c.CatalogRefresh = option.Duration(defaultRefresh)
	}
	if c.Client == nil {
		c.Client = &http.Client{Timeout: 15 * time.Second, CheckRedirect: noRedirects}
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// upstreamURL resolves a path against the upstream; URLs pass unchanged.
func (c *Config) upstreamURL(pathOrURL string) string {
	if strings.HasPrefix(pathOrURL, "/") {
		return c.Upstream + pathOrURL
	}
	return pathOrURL
}

// schedule adds the school's periodic work to the shared scheduler, each
// school at its own point of the period: the janitor, and the refreshes
// of what comes from the school (catalog.go, admin.go).
func (s *Site) schedule(ctx context.Context) {
	s.cfg.Scheduler.Add(ctx, schedule.Offset(s.cfg.Issuer, janitorEvery), func(ctx context.Context) time.Duration {
		s.as.Purge(ctx, janitorEvery)
		return janitorEvery
	})
	s.scheduleCatalog(ctx)
	s.scheduleAdminOpenAPI(ctx)
	s.scheduleUsage(ctx)
	s.scheduleSteps(ctx)
}

// Issuer is the school's origin.
func (s *Site) Issuer() string { return s.cfg.Issuer }

// Auth is the school's authorization server.
func (s *Site) Auth() *authserver.Server { return s.as }

// Store is the school's store.
func (s *Site) Store() store.Store { return s.cfg.Store }

// Since is when the school was built.
func (s *Site) Since() time.Time { return s.since }

// State is lazy until something of the school (catalog index, MCP server,
// documents) has been built by a request, serving after.
func (s *Site) State() string {
	if s.mcp.Load() != nil || s.docs.Load() != nil || s.catalog.Loaded() != nil {
		return "serving"
	}
	return "lazy"
}

type nopObserver struct{}

func (nopObserver) TokenIssued(string)       {}
func (nopObserver) Refused(string, string)   {}
func (nopObserver) Registered(string)        {}
func (nopObserver) TokenLookup(bool)         {}
func (nopObserver) GrantDisconnected(string) {}
func (nopObserver) ProtectedOutcome(string)  {}
func (nopObserver) MCPCaller(string)         {}
func (nopObserver) Refusal(store.Cause)      {}
