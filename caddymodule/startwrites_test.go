package caddymodule

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/school"
)

// A new school's first start commits once: its schema, first signing key
// and initial settings in one transaction, in a file made aside and put in
// its place with two syncs (boltstore's newfile.go). A restart commits
// nothing. A thousand new schools start with a thousand commits, not
// three thousand.
func TestStartCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "school.db")
	g := &Gateway{Options: school.Options{Upstream: "http://127.0.0.1:9080", Issuer: "https://school.example",
		Options: authserver.Options{Vendors: []authserver.VendorClient{{Name: "App", ClientID: "app", RedirectURIs: []string{"https://app.example/cb"}}}}}}
	g.SetDefaults()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	// start starts the school on its file and returns the file's commits
	// since it was created.
	start := func() int {
		st, err := boltstore.Open(path, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg := g.schoolConfig()
		cfg.Store, cfg.Scheduler = st, background
		if _, err := school.New(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		n, err := boltstore.Commits(st)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	first := start()
	if first != 1 {
		t.Errorf("first start: %d commits, want 1 (schema, key and settings together)", first)
	}
	if n := start(); n != first {
		t.Errorf("restart: %d commits, want none", n-first)
	}
}
