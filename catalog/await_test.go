package catalog

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Await waits for the first import of an expected feed and for nothing
// else: a reader that arrives while the feed is being fetched gets the
// catalog it brings, one that arrives when no feed is expected, after a
// failed first import or past its own deadline gets no catalog at once.
func TestManagerAwait(t *testing.T) {
	release := make(chan struct{})
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		if r.URL.Path == "/bad.json" {
			fmt.Fprint(w, feedBad)
			return
		}
		fmt.Fprint(w, feedV1)
	}))
	defer feed.Close()
	ctx := context.Background()

	// awaitDuring starts an Await on m, runs import, and returns what the
	// Await returned.
	awaitDuring := func(m *Manager, path string) *Index {
		got := make(chan *Index, 1)
		go func() { got <- m.Await(ctx, time.Minute) }()
		done := make(chan error, 1)
		go func() { done <- m.Refresh(ctx, feed.URL+path) }()
		select {
		case ix := <-got:
			t.Fatalf("Await returned %v before the import ended", ix)
		case <-time.After(50 * time.Millisecond):
		}
		release <- struct{}{}
		<-done
		return <-got
	}

	t.Run("first import succeeds", func(t *testing.T) {
		for _, lazy := range []bool{false, true} {
			m := NewManager(testOrigin, &memStore{})
			if lazy {
				m.LoadLazily()
			}
			m.ExpectImport()
			ix := awaitDuring(m, "/v1.json")
			if ix == nil || len(ix.Feed().Courses) != 1 {
				t.Fatalf("lazy %v: Await returned %v, want the imported catalog", lazy, ix)
			}
		}
	})
	t.Run("first import fails", func(t *testing.T) {
		m := NewManager(testOrigin, &memStore{})
		m.ExpectImport()
		if ix := awaitDuring(m, "/bad.json"); ix != nil {
			t.Fatal("a failed import brings no catalog")
		}
		if !returnsAtOnce(func() { m.Await(ctx, time.Minute) }) {
			t.Fatal("after the first import was tried, nobody waits")
		}
	})
	t.Run("no feed expected", func(t *testing.T) {
		m := NewManager(testOrigin, &memStore{})
		if !returnsAtOnce(func() { m.Await(ctx, time.Minute) }) {
			t.Fatal("a manager with no feed coming must not wait")
		}
	})
	t.Run("bounded by max and by ctx", func(t *testing.T) {
		m := NewManager(testOrigin, &memStore{})
		m.ExpectImport()
		if !returnsAtOnce(func() { m.Await(ctx, time.Millisecond) }) {
			t.Fatal("Await must give up after max")
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if !returnsAtOnce(func() { m.Await(cancelled, time.Minute) }) {
			t.Fatal("Await must give up when ctx ends")
		}
	})
	t.Run("stored feed needs no wait", func(t *testing.T) {
		m := NewManager(testOrigin, &memStore{raw: []byte(feedV1)})
		m.LoadLazily()
		m.ExpectImport()
		var ix *Index
		if !returnsAtOnce(func() { ix = m.Await(ctx, time.Minute) }) || ix == nil {
			t.Fatal("a stored feed is served without waiting for the import")
		}
	})
}

// returnsAtOnce reports whether f returns well within a second: long
// enough for a loaded machine, far below the minute the waits above
// would otherwise last.
func returnsAtOnce(f func()) bool {
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// FirstImport is what a reader that waits on more than the catalog
// selects on: nil when no first import is awaited, open while it is, and
// closed once it has been tried, failed or not.
func TestManagerFirstImport(t *testing.T) {
	m := NewManager(testOrigin, &memStore{})
	if m.FirstImport() != nil {
		t.Fatal("a manager with no feed coming awaits an import")
	}
	m.ExpectImport()
	ch := m.FirstImport()
	if ch == nil {
		t.Fatal("an expected import is not awaited")
	}
	select {
	case <-ch:
		t.Fatal("closed before the import was tried")
	default:
	}
	if err := m.Import(context.Background(), []byte(feedBad)); err == nil {
		t.Fatal("the bad feed was imported")
	}
	select {
	case <-ch:
	default:
		t.Fatal("still open after a failed first import")
	}
	if m.FirstImport() != nil {
		t.Fatal("an import that was tried is still awaited")
	}
}
