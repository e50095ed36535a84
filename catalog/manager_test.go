package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const (
	feedV1  = `{"school":{"name":"S"},"courses":[{"slug":"one","title":"One"}]}`
	feedV2  = `{"school":{"name":"S"},"courses":[{"slug":"two","title":"Two"}]}`
	feedV3  = `{"school":{"name":"S"},"courses":[{"slug":"three","title":"Three"}]}`
	feedBad = `{"school":{"name":"S"},"courses":[{"slug":"x"}]}`
)

func servedCourse(t *testing.T, m *Manager) string {
	t.Helper()
	ix := m.Current()
	if ix == nil {
		return ""
	}
	return ix.Feed().Courses[0].Slug
}

func TestManagerImport(t *testing.T) {
	store := &memStore{}
	m := NewManager(testOrigin, store)
	if m.Current() != nil {
		t.Fatal("no catalog before the first import")
	}
	if err := m.Import(context.Background(), []byte(feedV1)); err != nil {
		t.Fatal(err)
	}
	if servedCourse(t, m) != "one" || string(store.raw) != feedV1 {
		t.Fatal("import must serve and persist")
	}
	if got := m.Current().URL(KindCourse, "one"); got != testOrigin+"/courses/one" {
		t.Fatalf("origin not applied: %s", got)
	}

	err := m.Import(context.Background(), []byte(feedBad))
	if err == nil || !strings.Contains(err.Error(), `courses[0] "x": title is required`) || errors.Is(err, ErrNotStored) {
		t.Fatalf("bad feed: %v", err)
	}
	if servedCourse(t, m) != "one" || string(store.raw) != feedV1 {
		t.Fatal("a bad feed must leave the previous catalog serving and stored")
	}

	store.failErr = errDiskFull
	if err := m.Import(context.Background(), []byte(feedV2)); !errors.Is(err, ErrNotStored) || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("persist failure: %v", err)
	}
	if servedCourse(t, m) != "one" {
		t.Fatal("a feed that could not be stored must not be served")
	}
	store.failErr = nil

	saves := store.saves
	before := m.Current()
	if err := m.Import(context.Background(), []byte(feedV1)); err != nil {
		t.Fatal(err)
	}
	if store.saves != saves || m.Current() != before {
		t.Fatal("identical bytes must not be stored or swapped again")
	}
}

func TestManagerLoadPersisted(t *testing.T) {
	tests := []struct {
		name    string
		store   *memStore
		wantErr string
		want    string
	}{
		{"nothing stored", &memStore{}, "", ""},
		{"stored feed", &memStore{raw: []byte(feedV1)}, "", "one"},
		{"corrupt store", &memStore{raw: []byte(feedBad)}, "stored catalog", ""},
		{"store error", &memStore{failErr: errDiskFull}, "disk full", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewManager(testOrigin, tt.store)
			err := m.LoadPersisted(context.Background())
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if got := servedCourse(t, m); got != tt.want {
				t.Fatalf("serving %q, want %q", got, tt.want)
			}
		})
	}
	if err := NewManager(testOrigin, nil).LoadPersisted(context.Background()); err != nil {
		t.Fatal("no persister is not an error")
	}
}

func TestManagerLoadPersistedKeepsNewer(t *testing.T) {
	m := NewManager(testOrigin, &memStore{})
	if err := m.Import(context.Background(), []byte(feedV2)); err != nil {
		t.Fatal(err)
	}
	m.store.(*memStore).raw = []byte(feedV1)
	if err := m.LoadPersisted(context.Background()); err != nil {
		t.Fatal(err)
	}
	if servedCourse(t, m) != "two" {
		t.Fatal("LoadPersisted replaced a newer catalog")
	}
}

// TestManagerConcurrentReaders runs readers against imports; with -race
// it proves Current needs no lock.
func TestManagerConcurrentReaders(t *testing.T) {
	m := NewManager(testOrigin, &memStore{})
	if err := m.Import(context.Background(), []byte(feedV1)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				ix := m.Current()
				if len(ix.Search("", "", 0)) != 1 {
					t.Error("reader saw a half-built catalog")
					return
				}
			}
		})
	}
	for i := range 50 {
		feeds := []string{feedV1, feedV2, feedBad, feedV3}
		_ = m.Import(context.Background(), []byte(feeds[i%len(feeds)]))
	}
	wg.Wait()
}

func TestRefreshFromFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(good, []byte(feedV1), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, MaxFeedBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(feedBad), 0o600); err != nil {
		t.Fatal(err)
	}
	m := NewManager(testOrigin, &memStore{})
	tests := []struct {
		name, src, wantErr string
	}{
		{"good", good, ""},
		{"missing", filepath.Join(dir, "nope.json"), "no such file"},
		{"oversize", big, "larger than"},
		{"invalid", bad, "title is required"},
		{"demo", "../demoschool/catalog.json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := m.Current()
			err := m.Refresh(context.Background(), tt.src)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if m.Current() != before {
				t.Fatal("failed refresh changed the catalog")
			}
		})
	}
}

func TestRefreshFromHTTP(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/v1.json":
			fmt.Fprint(w, feedV1)
		case "/v2.json":
			fmt.Fprint(w, feedV2)
		case "/big-declared.json":
			w.Header().Set("Content-Length", fmt.Sprint(MaxFeedBytes+10))
			w.WriteHeader(http.StatusOK)
		case "/big-chunked.json":
			w.WriteHeader(http.StatusOK)
			chunk := make([]byte, 1<<20)
			for range 9 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "/error.json":
			http.Error(w, "boom", http.StatusInternalServerError)
		case "/redirect.json":
			http.Redirect(w, r, "/v2.json", http.StatusFound)
		case "/empty.json":
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	store := &memStore{}
	m := NewManager(testOrigin, store)
	tests := []struct {
		name, path, wantErr, serving string
	}{
		{"ok", "/v1.json", "", "one"},
		{"unchanged", "/v1.json", "", "one"},
		{"500 keeps previous", "/error.json", "500", "one"},
		{"404 keeps previous", "/missing.json", "404", "one"},
		{"204 is not 200", "/empty.json", "204", "one"},
		{"declared oversize", "/big-declared.json", "larger than", "one"},
		{"streamed oversize", "/big-chunked.json", "larger than", "one"},
		{"redirect followed", "/redirect.json", "", "two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := m.Refresh(context.Background(), srv.URL+tt.path)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if got := servedCourse(t, m); got != tt.serving {
				t.Fatalf("serving %q, want %q", got, tt.serving)
			}
		})
	}
	if store.saves != 2 {
		t.Fatalf("%d saves; an unchanged feed must not be written again", store.saves)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Refresh(ctx, srv.URL+"/v1.json"); err == nil {
		t.Fatal("cancelled context must stop the fetch")
	}
}

// Reload follows the store, which another instance of the site writes:
// a different stored feed replaces the served one, the same one or none
// changes nothing, and a bad or unreadable one keeps what is served.
func TestManagerReload(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	m := NewManager(testOrigin, store)
	steps := []struct {
		name    string
		stored  string
		fail    error
		changed bool
		wantErr string
		want    string
	}{
		{"nothing stored", "", nil, false, "", ""},
		{"another instance stored a feed", feedV1, nil, true, "", "one"},
		{"the same feed", feedV1, nil, false, "", "one"},
		{"a newer feed", feedV2, nil, true, "", "two"},
		{"a corrupt feed", feedBad, nil, false, "stored catalog", "two"},
		{"the store fails", feedV3, errDiskFull, false, "disk full", "two"},
	}
	for _, st := range steps {
		store.mu.Lock()
		store.raw, store.failErr = []byte(st.stored), st.fail
		store.mu.Unlock()
		changed, err := m.Reload(ctx)
		if changed != st.changed || (st.wantErr == "") != (err == nil) ||
			(err != nil && !strings.Contains(err.Error(), st.wantErr)) {
			t.Errorf("%s: Reload = %v, %v; want %v, %q", st.name, changed, err, st.changed, st.wantErr)
		}
		if got := servedCourse(t, m); got != st.want {
			t.Errorf("%s: serving %q, want %q", st.name, got, st.want)
		}
	}
	if changed, err := NewManager(testOrigin, nil).Reload(ctx); changed || err != nil {
		t.Errorf("no persister: %v, %v", changed, err)
	}
}
