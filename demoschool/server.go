package demoschool

import (
	"net/http"
	"time"
)

// Options configures a demo school. The zero value is a working school
// with the bundled catalog.
type Options struct {
	// Catalog is the catalog to serve; nil means the bundled catalog.json.
	// Seeded enrollments name bundled course slugs, so a custom catalog
	// should keep those courses for the Account API data to make sense.
	Catalog *Catalog

	// DisableRecorder turns off GET /__demo/last-request (it then answers
	// 404), for a school reachable by people other than its tester.
	DisableRecorder bool

	// Assertion, when set, makes the protected APIs refuse requests without
	// a valid signed identity assertion from the gateway and take the
	// identity from it (assertion.go). Nil trusts the X-School-* headers.
	Assertion *AssertionConfig

	// Now is the clock for session expiry; nil means time.Now. Tests set it.
	Now func() time.Time
}

// school is the state of one demo school; every New starts from the same seed data.
type school struct {
	users    *userDirectory
	sessions *sessionStore
	accounts *accountStore
	catalog  *catalogStore
	recorder *recorder
	// assertions verifies the gateway's identity assertion; nil is off.
	assertions *assertionGuard
}

// New returns the demo school's HTTP handler.
func New(opts Options) http.Handler {
	cat := opts.Catalog
	if cat == nil {
		var err error
		if cat, err = ParseCatalog(bundledCatalog); err != nil {
			// The tests parse the bundled catalog too, so this cannot ship.
			panic("demoschool: bundled catalog: " + err.Error())
		}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	s := &school{
		users:    newUserDirectory(),
		sessions: newSessionStore(now),
		accounts: newAccountStore(),
		catalog:  newCatalogStore(cat),
		recorder: &recorder{},
	}
	s.assertions = newAssertionGuard(opts.Assertion, now)
	return s.routes(!opts.DisableRecorder)
}

func (s *school) routes(record bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET "+stylesheetPath, serveStylesheet)
	mux.HandleFunc("GET /{$}", s.home)
	mux.HandleFunc("GET /courses/{slug}", s.course)
	mux.HandleFunc("GET /catalog.json", s.catalogFeed)
	mux.HandleFunc("GET /admin-openapi.json", serveAdminOpenAPI)
	mux.HandleFunc("GET /login", s.loginForm)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.logout)
	mux.HandleFunc("GET /api/session", s.sessionInfo)

	protected := func(h http.HandlerFunc) http.Handler {
		h = s.assertions.guard(h)
		if record {
			return s.recorder.wrap(h)
		}
		return h
	}
	if record {
		mux.HandleFunc("GET /__demo/last-request", s.recorder.lastRequest)
		mux.HandleFunc("GET /__demo/protected-log", s.recorder.protectedLog)
	}
	mux.HandleFunc("/", s.notFound)
	// The protected APIs are mounted by prefix in front of the mux; their
	// handlers answer a wrong method with their own JSON error, and the
	// recorder sees every attempt.
	return legacyRouter{account: protected(s.graphql), admin: protected(s.admin), rest: mux}
}

// catalogFeed serves the live catalog as the gateway's catalog feed.
func (s *school) catalogFeed(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, s.catalog.snapshot())
}
