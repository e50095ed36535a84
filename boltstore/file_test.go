package boltstore

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Held tells a file a process has open, or is making, from one no one
// holds; a file that is not there is not held, one that is no bbolt file
// is an error.
func TestHeld(t *testing.T) {
	dir := t.TempDir()
	if got := Path(dir); got != filepath.Join(dir, "school.db") {
		t.Fatalf("Path: %s", got)
	}
	path := Path(dir)
	if held, err := Held(path); held || err != nil {
		t.Errorf("a file that is not there: held %v, %v", held, err)
	}
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if held, err := Held(path); !held || err != nil {
		t.Errorf("a file opened: held %v, %v", held, err)
	}
	if err := s.PutSetting(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if held, err := Held(path); !held || err != nil {
		t.Errorf("a file opened and written: held %v, %v", held, err)
	}
	s.Close()
	if held, err := Held(path); held || err != nil {
		t.Errorf("a file closed: held %v, %v", held, err)
	}
	other := filepath.Join(dir, "other.db")
	if err := os.WriteFile(other, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Held(other); err == nil {
		t.Error("a file that is no bbolt file: no error")
	}
}
