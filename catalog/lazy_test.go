package catalog

import (
	"context"
	"strings"
	"testing"
)

// A cold manager keeps no index until its first Current: a refresh of the
// feed it has stored neither writes nor indexes, a changed feed is stored
// for the first use, and a failed read is tried again.
func TestManagerLazy(t *testing.T) {
	ctx := context.Background()
	cold := func(t *testing.T, stored string) (*Manager, *memStore) {
		t.Helper()
		store := &memStore{raw: []byte(stored)}
		m := NewManager(testOrigin, store)
		m.LoadLazily()
		if m.Loaded() != nil || !m.Cold() || m.Courses() != -1 {
			t.Fatal("a lazy manager reads nothing before its first use")
		}
		return m, store
	}

	t.Run("unchanged feed stays cold", func(t *testing.T) {
		m, store := cold(t, feedV1)
		if err := m.Import(ctx, []byte(feedV1)); err != nil {
			t.Fatal(err)
		}
		if store.saves != 0 || m.Loaded() != nil || !m.Cold() {
			t.Fatal("the stored feed again must not be written or indexed")
		}
		if servedCourse(t, m) != "one" || m.Cold() || m.Courses() != 1 {
			t.Fatal("the first use serves the stored feed")
		}
	})
	t.Run("changed feed is stored for the first use", func(t *testing.T) {
		m, store := cold(t, feedV1)
		if err := m.Import(ctx, []byte(feedV2)); err != nil {
			t.Fatal(err)
		}
		if store.saves != 1 || string(store.raw) != feedV2 || m.Loaded() != nil || m.Courses() != 1 {
			t.Fatal("a changed feed is stored, counted and not yet indexed")
		}
		if err := m.Import(ctx, []byte(feedV2)); err != nil || store.saves != 1 {
			t.Fatalf("the same feed twice is stored once: %v, %d saves", err, store.saves)
		}
		if servedCourse(t, m) != "two" {
			t.Fatal("the first use serves the newest feed")
		}
	})
	t.Run("bad feed leaves the stored one", func(t *testing.T) {
		m, store := cold(t, feedV1)
		if err := m.Import(ctx, []byte(feedBad)); err == nil {
			t.Fatal("a bad feed must be refused while cold")
		}
		if string(store.raw) != feedV1 || servedCourse(t, m) != "one" {
			t.Fatal("a bad feed must leave the stored catalog")
		}
	})
	t.Run("store failure is retried", func(t *testing.T) {
		m, store := cold(t, feedV1)
		store.failErr = errDiskFull
		if m.Current() != nil || !m.Cold() || !strings.Contains(m.LoadError(), "disk full") {
			t.Fatalf("a failed read serves nothing, stays cold and says why: %q", m.LoadError())
		}
		store.failErr = nil
		if servedCourse(t, m) != "one" || m.LoadError() != "" {
			t.Fatal("the next use reads the feed")
		}
	})
	t.Run("unreadable stored feed waits for an import", func(t *testing.T) {
		m, _ := cold(t, feedBad)
		if m.Current() != nil || m.Cold() || m.LoadError() == "" {
			t.Fatal("a stored feed that does not parse serves nothing and says why")
		}
		if err := m.Import(ctx, []byte(feedV1)); err != nil || servedCourse(t, m) != "one" {
			t.Fatalf("an import serves at once: %v", err)
		}
	})
	t.Run("another instance's import", func(t *testing.T) {
		m, store := cold(t, feedV1)
		store.raw = []byte(feedV2)
		if changed, err := m.Reload(ctx); err != nil || changed || !m.Cold() {
			t.Fatalf("a cold manager has nothing to swap: %v %v", changed, err)
		}
		if err := m.Import(ctx, []byte(feedV2)); err != nil || store.saves != 0 {
			t.Fatal("the feed another instance stored is not written again")
		}
		if servedCourse(t, m) != "two" {
			t.Fatal("the first use serves what the other instance stored")
		}
	})
	t.Run("a stored feed is known without being parsed", func(t *testing.T) {
		m, store := cold(t, feedV1)
		if ok, err := m.HasStoredFeed(ctx); !ok || err != nil {
			t.Fatalf("a stored feed: %v %v", ok, err)
		}
		store.failErr = errDiskFull
		if ok, err := m.HasStoredFeed(ctx); !ok || err != nil {
			t.Fatal("once known, the answer needs no read")
		}
		if m.Loaded() != nil || !m.Cold() {
			t.Fatal("asking must not load the feed")
		}
		empty, store := cold(t, "")
		if ok, err := empty.HasStoredFeed(ctx); ok || err != nil {
			t.Fatalf("no stored feed: %v %v", ok, err)
		}
		if err := empty.Import(ctx, []byte(feedV1)); err != nil || store.saves != 1 {
			t.Fatal(err)
		}
		if ok, _ := empty.HasStoredFeed(ctx); !ok {
			t.Fatal("an import while cold is known to be stored")
		}
		failing, store := cold(t, feedV1)
		store.failErr = errDiskFull
		if _, err := failing.HasStoredFeed(ctx); err == nil {
			t.Fatal("a store that fails to answer is an error, not 'no feed'")
		}
	})
	t.Run("no store loads nothing lazily", func(t *testing.T) {
		m := NewManager(testOrigin, nil)
		m.LoadLazily()
		if m.Cold() || m.Current() != nil {
			t.Fatal("without a store there is nothing to read later")
		}
	})
}
