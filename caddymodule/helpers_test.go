package caddymodule

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/metrics"
	"github.com/schoolgate/schoolgate/school"
	"github.com/schoolgate/schoolgate/schooltest"
	"github.com/schoolgate/schoolgate/store"
)

// testSite is a school built as Provision builds one, without Caddy: on a
// bbolt store, with an access token minted straight into the store.
type testSite struct {
	g        *Gateway
	site     *site
	token    string
	as       *authserver.Server
	upstream *recordingNext
}

// recordingNext stands for the reverse proxy: it keeps what would be
// forwarded.
type recordingNext struct{ header http.Header }

func (n *recordingNext) ServeHTTP(_ http.ResponseWriter, r *http.Request) error {
	n.header = r.Header
	return nil
}

func newTestSite(tb testing.TB, assertion *school.IdentityAssertion) *testSite {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "school.db")
	store, err := boltstore.Open(path, time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	g := &Gateway{Options: school.Options{Upstream: "http://127.0.0.1:9080", Issuer: "https://school.example", IdentityAssertion: assertion}}
	g.SetDefaults()
	if err := g.Validate(); err != nil {
		tb.Fatal(err)
	}
	s := buildTestSite(tb, g, &siteStore{Store: store, where: path})
	g.run = newGatewayRun()
	g.run.Set(&gatewayState{site: s})
	return &testSite{g: g, site: s, as: s.Auth(), token: mintMemberToken(tb, store, g.Issuer), upstream: &recordingNext{}}
}

// buildTestSite builds g's school on stored, as newSite does after
// opening the store.
func buildTestSite(tb testing.TB, g *Gateway, stored *siteStore) *site {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	observe := metrics.NewRef(metrics.NewObserver(metrics.For(nil), g.Issuer))
	cfg := g.schoolConfig()
	cfg.Store, cfg.Observer, cfg.Scheduler = stored.Store, observe, background
	s, err := school.New(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return &site{Site: s, gateway: g, observe: observe, stored: stored, log: slog.Default()}
}

// mintMemberToken stores the student's grant "grant-1" and an access
// token of it, as a code exchange would.
func mintMemberToken(tb testing.TB, st store.Store, origin string) string {
	return schooltest.MemberToken(tb, st, origin, "grant-1", "")
}

// runningAs makes app the running config's for the admin API until the
// test ends.
func runningAs(t testing.TB, app *App) {
	prev := activeApp
	activeApp = func() (any, error) { return app, nil }
	t.Cleanup(func() { activeApp = prev })
}
