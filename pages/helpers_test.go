package pages

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/schooltest"
	"github.com/schoolgate/schoolgate/store"
	"github.com/schoolgate/schoolgate/store/storetest"
)

// The pages are tested as a school serves them: an authorization server
// with these pages, on a bbolt store, in front of a fake legacy site,
// every request through the server's route table.

// The test school, its people and clients: schooltest's, by the names
// this package's tests use.
const (
	issuer         = schooltest.Issuer
	memberClient   = schooltest.MemberClient
	confidential   = schooltest.Confidential
	portalSecret   = schooltest.PortalSecret
	operatorClient = schooltest.OperatorClient
	memberRedirect = schooltest.MemberRedirect
	opsRedirect    = schooltest.OpsRedirect
)

var (
	people         = schooltest.People
	hashToken      = schooltest.HashToken
	pkce           = schooltest.PKCE
	authParams     = schooltest.AuthParams
	redirectParams = schooltest.RedirectParams
	reRequest      = schooltest.RequestIDPattern
	reCSRF         = schooltest.CSRFPattern
)

type fixture struct {
	t testing.TB
	// srv is the authorization server, pages its pages.
	srv   *authserver.Server
	pages *Pages
	// store is the store beneath fails, which the server stands on.
	store store.Store
	fails *storetest.Failing
	clock *schooltest.Clock
	// logs is what the server and its pages log, for the tests that
	// look at it.
	logs *schooltest.Buffer
}

// newFixture is a school's authorization server with its pages.
func newFixture(t testing.TB) *fixture {
	return newFixtureWith(t, nil)
}

// newFixtureWith is newFixture with the server's configuration changed by
// edit, when not nil.
func newFixtureWith(t testing.TB, edit func(*authserver.Config)) *fixture {
	t.Helper()
	legacy := schooltest.LegacySessions(t)
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "school.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// A test's store does not sync its file: no test here checks what a
	// crash leaves (boltstore's own tests do), and the syncs were most of
	// the package's time. A benchmark keeps the syncs it measures.
	if _, bench := t.(*testing.B); !bench {
		if err := boltstore.NoSync(st); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{t: t, store: st, fails: &storetest.Failing{Store: st},
		clock: schooltest.NewClock(schooltest.Epoch), logs: &schooltest.Buffer{}}
	logger := slog.New(slog.NewTextHandler(f.logs, nil))
	cfg := authserver.Config{
		Issuer:     issuer,
		SessionURL: legacy.URL + "/api/session",
		LoginURL:   "/login",
		Options: authserver.Options{Vendors: []authserver.VendorClient{
			{ClientID: memberClient, Name: "Member App", RedirectURIs: []string{memberRedirect}},
			{ClientID: confidential, Name: "Portal", RedirectURIs: []string{memberRedirect}, Secret: portalSecret,
				Scopes: []string{"openid", "profile", "email", "account:read"}},
			{ClientID: operatorClient, Name: "Ops CLI", RedirectURIs: []string{opsRedirect}, Audience: store.AudienceOperator},
		}},
		Logger: logger,
		Now:    f.clock.Now,
		Pages: func(as *authserver.Server) authserver.Pages {
			f.pages = New(as, Config{Logger: logger, Now: f.clock.Now})
			return f.pages
		},
	}
	if edit != nil {
		edit(&cfg)
	}
	if f.srv, err = authserver.New(context.Background(), cfg, f.fails); err != nil {
		t.Fatal(err)
	}
	return f
}

// failingFixture is a fixture whose server's store can be made to fail.
func failingFixture(t testing.TB) (*fixture, *storetest.Failing) {
	f := newFixture(t)
	return f, f.fails
}

// randomString is 256 random bits, base64url.
func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// client runs the flow's requests through the fixture's server
// (schooltest.Client; the methods below are its, by this package's
// names).
func (f *fixture) client() schooltest.Client { return schooltest.Client{TB: f.t, Handler: f.srv} }

func (f *fixture) serve(method, target string, body io.Reader, hdr map[string]string) *httptest.ResponseRecorder {
	return f.client().Serve(method, target, body, hdr)
}

func (f *fixture) authorize(q url.Values, person string) *httptest.ResponseRecorder {
	return f.client().Authorize(q, person)
}

func (f *fixture) consent(rec *httptest.ResponseRecorder, person, decision string) *httptest.ResponseRecorder {
	return f.client().Consent(rec, person, decision)
}

// code returns a code of q for the student; verifier is q's and unused.
func (f *fixture) code(q url.Values, verifier string) string { return f.client().Code(q) }

func (f *fixture) token(form url.Values) (int, map[string]any) { return f.client().Token(form) }

func (f *fixture) exchange(code, verifier string) (int, map[string]any) {
	return f.client().Exchange(code, verifier)
}

func (f *fixture) tokens() map[string]any { return f.client().Tokens() }

func refreshForm(rt string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {memberClient}}
}
