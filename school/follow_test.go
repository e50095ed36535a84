package school

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// watchedStore stands for a store that several instances share: the test
// announces a change as another instance's notification would.
type watchedStore struct {
	store.Store
	mu  sync.Mutex
	fns []func(store.Change)
}

func (w *watchedStore) Watch(fn func(store.Change)) func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fns = append(w.fns, fn)
	return func() {}
}

func (w *watchedStore) announce(c store.Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, fn := range w.fns {
		fn(c)
	}
}

// A catalog another instance stored, and a switch it turned on, reach
// this instance's catalog and documents when announced.
func TestFollowOtherInstances(t *testing.T) {
	bolt := openStore(t)
	shared := &watchedStore{Store: bolt}
	ctx := context.Background()
	s := newTestSite(t, func(c *Config) { c.Store = shared })
	if err := s.rebuildDocs(); err != nil {
		t.Fatal(err)
	}
	authMD := func() string {
		rec := httptest.NewRecorder()
		s.docs.Load().ServeHTTP(rec, httptest.NewRequest("GET", "/auth.md", nil))
		return rec.Body.String()
	}
	before := authMD()

	// Another instance imports a feed: it is in the store, not yet here.
	feed := `{"school":{"name":"Followed School"},"courses":[{"slug":"light","title":"Light"}]}`
	if err := bolt.SaveCatalog(ctx, []byte(feed)); err != nil {
		t.Fatal(err)
	}
	if s.catalog.Current() != nil {
		t.Fatal("the catalog loaded before it was announced")
	}
	shared.announce(store.ChangeCatalog)
	if idx := s.catalog.Current(); idx == nil || idx.Feed().School.Name != "Followed School" {
		t.Fatal("the announced catalog was not loaded")
	}
	if !strings.Contains(authMD(), "Followed School") {
		t.Error("the documents were not rebuilt with the new catalog")
	}

	// Another instance switches MCP connections on.
	afterCatalog := authMD()
	if err := bolt.PutSetting(ctx, "mcp_connections", []byte("on")); err != nil {
		t.Fatal(err)
	}
	shared.announce(store.ChangeSettings)
	if authMD() == afterCatalog {
		t.Errorf("the documents did not change with the switch:\n%s", authMD())
	}
	if before == afterCatalog {
		t.Error("nothing changed at all")
	}
}

// skewedStore reports a clock skew, as a shared database's store does.
type skewedStore struct {
	store.Store
	skew time.Duration
	err  error
}

func (s skewedStore) ClockSkew(context.Context) (time.Duration, error) { return s.skew, s.err }

// Health reports a shared store's clock skew, and a store that cannot
// tell it as failing.
func TestHealthReportsClockSkew(t *testing.T) {
	for _, tt := range []struct {
		name    string
		err     error
		healthy bool
	}{{"skew read", nil, true}, {"skew unreadable", errors.New("database unreachable"), false}} {
		s := newTestSite(t, func(c *Config) { c.Store = skewedStore{Store: c.Store, skew: 42 * time.Millisecond, err: tt.err} })
		h := s.Health(context.Background())
		if h.Healthy != tt.healthy {
			t.Errorf("%s: healthy = %v (%s)", tt.name, h.Healthy, h.Store)
		}
		if tt.healthy && (h.ClockSkewMS == nil || *h.ClockSkewMS != 42) {
			t.Errorf("%s: clock_skew_ms = %v, want 42", tt.name, h.ClockSkewMS)
		}
	}
}
