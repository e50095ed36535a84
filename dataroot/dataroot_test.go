package dataroot

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/boltstore"
)

// makeSchoolDir leaves a school's bbolt file in dir.
func makeSchoolDir(t *testing.T, dir string) {
	t.Helper()
	s, err := boltstore.Open(boltstore.Path(dir), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := boltstore.Fill(s, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// schoolDirs lists the data root.
func schoolDirs(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// The name a directory of an earlier version stands for now.
func TestSpelledName(t *testing.T) {
	for _, tt := range []struct{ name, scheme, want string }{
		{"School.Example_443", "https", "school.example"},
		{"School.Example_0443", "https", "school.example"},
		{"school.example_", "https", "school.example"},
		{"School.Example", "https", "school.example"},
		{"school.example_443", "http", "school.example_443"},
		{"School.Example_80", "http", "school.example"},
		{"school.example_80", "https", "school.example_80"},
		{"School.Example_08443", "https", "school.example_8443"},
		{"127.0.0.1_8080", "http", "127.0.0.1_8080"},
		{"__1_443", "https", "__1"},
		{"__1", "https", "__1"},
		{"FE80__A", "https", "fe80__a"},
		{"my_school.example", "https", "my_school.example"},
		{"school.example_99999", "https", "school.example_99999"},
	} {
		if got := spelledName(tt.name, tt.scheme); got != tt.want {
			t.Errorf("spelledName(%q, %s) = %q, want %q", tt.name, tt.scheme, got, tt.want)
		}
	}
}

// The data root is listed once for many schools, not once per school, and
// listed again once it changed.
func TestDataRootListing(t *testing.T) {
	root := t.TempDir()
	makeSchoolDir(t, filepath.Join(root, "other.example"))
	reads := 0
	prev := readDataRoot
	readDataRoot = func(dir string) ([]os.DirEntry, error) { reads++; return os.ReadDir(dir) }
	t.Cleanup(func() { readDataRoot = prev })

	for _, issuer := range []string{"https://a.example", "https://b.example", "https://c.example"} {
		if err := Prepare(root, issuer); err != nil {
			t.Fatal(err)
		}
	}
	if reads != 1 {
		t.Errorf("three schools read the data root %d times, want once: a school's own directory is no change to read", reads)
	}
	if dirs := schoolDirs(t, root); !slices.Equal(dirs, []string{"a.example", "b.example", "c.example", "other.example"}) {
		t.Errorf("data directories %v", dirs)
	}

	makeSchoolDir(t, filepath.Join(root, "School.Example_443"))
	// However coarse the file system's clock, the root has changed.
	if err := os.Chtimes(root, time.Time{}, time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	err := Prepare(root, "https://school.example")
	if err == nil || !strings.Contains(err.Error(), "School.Example_443") {
		t.Fatalf("a directory of another spelling that appeared after the listing: %v", err)
	}
	if reads != 2 {
		t.Errorf("the changed root was read %d times in all, want twice", reads)
	}
}
