package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/store"
)

// commits is boltstore.Commits, failing the test on error.
func commits(t *testing.T, s store.Store) int {
	t.Helper()
	n, err := boltstore.Commits(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A new file is opened without a commit; reads see empty buckets; the
// first write commits the schema with it, and the file then opens as any
// other.
func TestFreshFile(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		write func(store.Store) error
	}{
		{"a plain write", func(s store.Store) error { return s.PutSetting(ctx, "k", []byte("v")) }},
		{"a group-committed write", func(s store.Store) error {
			return s.PutCode(ctx, "code", &store.Code{ExpiresAt: time.Now().Add(time.Minute)})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "school.db")
			s, err := boltstore.Open(path, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if n := commits(t, s); n != 0 {
				t.Errorf("open of a new file: %d commits, want 0", n)
			}
			if keys, err := s.LoadKeys(ctx); err != nil || len(keys) != 0 {
				t.Errorf("LoadKeys of a new file = %v, %v", keys, err)
			}
			if _, err := s.GetSetting(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GetSetting of a new file: %v, want ErrNotFound", err)
			}
			if n := commits(t, s); n != 0 {
				t.Errorf("reads of a new file: %d commits, want 0", n)
			}
			if err := tt.write(s); err != nil {
				t.Fatal(err)
			}
			if n := commits(t, s); n != 1 {
				t.Errorf("first write: %d commits, want 1", n)
			}
			s.Close()
			s, err = boltstore.Open(path, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if n := commits(t, s); n != 1 {
				t.Errorf("reopening: %d commits in all, want 1: the schema was written with the first write", n)
			}
		})
	}
}

// A backup of a new file opens as a store: the schema is written first.
func TestFreshFileBackup(t *testing.T) {
	s := openBolt(t)
	var buf bytes.Buffer
	b := s.(interface {
		Backup(context.Context, io.Writer) error
	})
	if err := b.Backup(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := boltstore.Export(path); err != nil {
		t.Errorf("the backup of a new file: %v", err)
	}
}

// InitSite stores the first key and the settings not yet stored, in one
// commit, and keeps what is there.
func TestInitSite(t *testing.T) {
	ctx := context.Background()
	s := openBolt(t)
	init := s.(interface {
		InitSite(context.Context, store.StoredKey, map[string][]byte) ([]store.StoredKey, error)
	})
	keys, err := init.InitSite(ctx, store.StoredKey{KID: "a"}, map[string][]byte{"x": []byte("1")})
	if err != nil || len(keys) != 1 || keys[0].KID != "a" {
		t.Fatalf("InitSite of a new store = %v, %v", keys, err)
	}
	if n := commits(t, s); n != 1 {
		t.Errorf("InitSite of a new file: %d commits, want 1", n)
	}
	if err := s.PutSetting(ctx, "x", []byte("2")); err != nil {
		t.Fatal(err)
	}
	keys, err = init.InitSite(ctx, store.StoredKey{KID: "b"}, map[string][]byte{"x": []byte("3"), "y": []byte("4")})
	if err != nil || len(keys) != 1 || keys[0].KID != "a" {
		t.Errorf("InitSite again = %v, %v; want the stored key alone", keys, err)
	}
	for k, want := range map[string]string{"x": "2", "y": "4"} {
		if v, err := s.GetSetting(ctx, k); err != nil || string(v) != want {
			t.Errorf("setting %s = %q, %v; want %q", k, v, err, want)
		}
	}
}
