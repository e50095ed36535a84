//go:build linux

package boltstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// open is Open of path, failing the test on error.
func open(t *testing.T, path string, timeout time.Duration) *boltStore {
	t.Helper()
	s, err := Open(path, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*boltStore)
}

// exists reports whether a file is at path.
func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// initSite is a new school's first start: its first key and a setting.
func initSite(s *boltStore, kid string) error {
	_, err := s.InitSite(context.Background(), store.StoredKey{KID: kid}, map[string][]byte{"mcp": []byte("on")})
	return err
}

// initPlaced is initSite and the wait for its file to be in place, which
// InitSite does not wait for.
func initPlaced(s *boltStore, kid string) error {
	if err := initSite(s, kid); err != nil {
		return err
	}
	return s.waitPlaced()
}

// A new file is made beside its path, bbolt syncing nothing: it starts
// from bbolt's first pages (no sync of bbolt's own creating it) and the
// first commit runs without bbolt's syncs (none for the commit, none for
// growing the file); place then syncs the file and its directory. Only
// then does the file have its name, and the next commits are synced by
// bbolt as always.
func TestNewFileMadeAside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "school.db")
	s := open(t, path, time.Second)
	if exists(t, path) {
		t.Fatal("the file has its name before its first commit")
	}
	st, err := os.Stat(path + newSuffix)
	if err != nil || st.Size() == 0 {
		t.Fatalf("the file made aside: %v, %v; want bbolt's first pages written before bbolt opened it", st, err)
	}
	if !s.db.NoSync || !s.db.NoGrowSync {
		t.Errorf("before the first commit: NoSync %v, NoGrowSync %v; want bbolt to sync nothing", s.db.NoSync, s.db.NoGrowSync)
	}
	if keys, err := s.LoadKeys(context.Background()); err != nil || len(keys) != 0 {
		t.Errorf("LoadKeys of a new file = %v, %v", keys, err)
	}
	if err := initPlaced(s, "a"); err != nil {
		t.Fatal(err)
	}
	if !exists(t, path) || exists(t, path+newSuffix) {
		t.Errorf("after the first commit: the file at its name %v, aside %v", exists(t, path), exists(t, path+newSuffix))
	}
	if s.db.NoSync || s.db.NoGrowSync {
		t.Errorf("after the first commit: NoSync %v, NoGrowSync %v; want bbolt to sync as always", s.db.NoSync, s.db.NoGrowSync)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != newFileSize {
		t.Errorf("the file: %v, %v; want %d bytes", st, err, newFileSize)
	}
	if err := s.PutSetting(context.Background(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, path, time.Second)
	defer s.Close()
	if n, _ := Commits(s); n != 2 {
		t.Errorf("reopened: %d commits, want 2", n)
	}
	if keys, err := s.LoadKeys(context.Background()); err != nil || len(keys) != 1 || keys[0].KID != "a" {
		t.Errorf("reopened: keys %v, %v", keys, err)
	}
}

// A store fuzzing asked not to sync stays so after its file's placing.
func TestNewFileNoSyncKept(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "school.db"), time.Second)
	defer s.Close()
	if err := NoSync(s); err != nil {
		t.Fatal(err)
	}
	if err := initPlaced(s, "a"); err != nil {
		t.Fatal(err)
	}
	if !s.db.NoSync {
		t.Error("the first commit turned syncing back on")
	}
}

// A new file closed before any commit leaves nothing; one a process left
// half made (it died before its first commit was synced) is made anew,
// from bbolt's first pages made in memory or, when they could not be
// made, by bbolt in the file.
func TestNewFileNotMade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "school.db")
	s := open(t, path, time.Second)
	s.Close()
	if exists(t, path) || exists(t, path+newSuffix) {
		t.Fatalf("a store never written left a file: %v, aside %v", exists(t, path), exists(t, path+newSuffix))
	}
	pages := newImage()
	if pages == nil {
		t.Fatal("bbolt's first pages were not made in memory")
	}
	t.Cleanup(func() { image.pages = pages })
	for _, tt := range []struct {
		name  string
		pages []byte
	}{{"from the pages made in memory", pages}, {"made by bbolt", nil}} {
		image.pages = tt.pages
		for _, left := range [][]byte{make([]byte, 20<<10), []byte("half a page")} {
			if err := os.WriteFile(path+newSuffix, left, 0o600); err != nil {
				t.Fatal(err)
			}
			s = open(t, path, time.Second)
			if err := initSite(s, "a"); err != nil {
				t.Fatalf("%s over %d bytes left behind: %v", tt.name, len(left), err)
			}
			s.Close()
			s = open(t, path, time.Second)
			if keys, err := s.LoadKeys(context.Background()); err != nil || len(keys) != 1 {
				t.Errorf("%s over %d bytes left behind: keys %v, %v", tt.name, len(left), keys, err)
			}
			s.Close()
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// One process makes a new file at a time: another waits for the lock of
// the file made aside, as for a store file's, and then opens what the
// first made, or makes it itself if the first let go without a commit.
func TestNewFileTwoProcesses(t *testing.T) {
	for _, first := range []string{"commits", "lets go"} {
		t.Run(first, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "school.db")
			a := open(t, path, time.Second)
			if _, err := Open(path, 10*time.Millisecond); !errors.Is(err, ErrLocked) {
				t.Fatalf("a second Open while the first makes the file: %v, want ErrLocked", err)
			}
			// Flock locks per open file, so a second Open in this
			// process waits as another process's would.
			type opened struct {
				s   *boltStore
				err error
			}
			second := make(chan opened, 1)
			go func() {
				s, err := Open(path, 10*time.Second)
				b, _ := s.(*boltStore)
				second <- opened{b, err}
			}()
			time.Sleep(100 * time.Millisecond) // the second is waiting, most likely
			if first == "commits" {
				if err := initSite(a, "a"); err != nil {
					t.Fatal(err)
				}
			}
			a.Close()
			b := <-second
			if b.err != nil {
				t.Fatal(b.err)
			}
			defer b.s.Close()
			if err := initPlaced(b.s, "b"); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"commits": "a", "lets go": "b"}[first]
			if keys, err := b.s.LoadKeys(context.Background()); err != nil || len(keys) != 1 || keys[0].KID != want {
				t.Errorf("the second's keys: %v, %v; want %s's", keys, err, want)
			}
			if !exists(t, path) || exists(t, path+newSuffix) {
				t.Errorf("the file at its name %v, aside %v", exists(t, path), exists(t, path+newSuffix))
			}
		})
	}
}

// A file that appeared at the path while the new one was made (a process
// that ignores the lock of the file made aside) is left alone: the first
// commit fails, and so does every later one. A file system without hard
// links gets the file renamed into place.
func TestNewFilePlacing(t *testing.T) {
	t.Run("a file appeared", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "school.db")
		s := open(t, path, time.Second)
		defer s.Close()
		if err := os.WriteFile(path, []byte("theirs"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := initPlaced(s, "a"); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("the first commit's placing: %v, want ErrExist", err)
		}
		if err := s.PutSetting(context.Background(), "k", []byte("v")); !errors.Is(err, fs.ErrExist) {
			t.Errorf("a later commit: %v, want the placing's error", err)
		}
		if b, _ := os.ReadFile(path); string(b) != "theirs" {
			t.Errorf("the file that appeared holds %q", b)
		}
	})
	t.Run("no hard links", func(t *testing.T) {
		hardLink = func(string, string) error { return &os.LinkError{Op: "link", Err: syscall.EPERM} }
		t.Cleanup(func() { hardLink = os.Link })
		path := filepath.Join(t.TempDir(), "school.db")
		s := open(t, path, time.Second)
		if err := initSite(s, "a"); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if !exists(t, path) || exists(t, path+newSuffix) {
			t.Errorf("the file at its name %v, aside %v", exists(t, path), exists(t, path+newSuffix))
		}
	})
}

// A link that fails for another reason than a file system without hard
// links (no space, I/O) fails the first commit: renaming instead would
// replace a file made at the path meanwhile.
func TestNewFileLinkFailing(t *testing.T) {
	hardLink = func(string, string) error { return &os.LinkError{Op: "link", Err: syscall.ENOSPC} }
	t.Cleanup(func() { hardLink = os.Link })
	path := filepath.Join(t.TempDir(), "school.db")
	s := open(t, path, time.Second)
	defer s.Close()
	if err := initPlaced(s, "a"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("the first commit's placing: %v, want ENOSPC", err)
	}
	if err := s.PutSetting(context.Background(), "k", []byte("v")); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("a later commit: %v, want the placing's error", err)
	}
	if exists(t, path) {
		t.Error("the file was renamed into place after a failed link")
	}
}

// A crash between the link that names a made file and the removal of its
// .new name leaves that name behind, a second name of the school's file.
// It is dropped on the next open; and if the school's file was moved away
// meanwhile (an import with --move, an operator's mv), the next new store
// at the old path is made in a file of its own, never in the moved one.
func TestNewFileStaleName(t *testing.T) {
	keysOf := func(path string) []string {
		t.Helper()
		s := open(t, path, time.Second)
		defer s.Close()
		keys, err := s.LoadKeys(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var kids []string
		for _, k := range keys {
			kids = append(kids, k.KID)
		}
		return kids
	}
	made := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "school.db")
		s := open(t, path, time.Second)
		if err := initSite(s, "a"); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if err := os.Link(path, path+newSuffix); err != nil { // the crash's leftover
			t.Fatal(err)
		}
		return path
	}
	t.Run("dropped on open", func(t *testing.T) {
		path := made(t)
		if kids := keysOf(path); len(kids) != 1 || kids[0] != "a" {
			t.Errorf("keys %v, want [a]", kids)
		}
		if exists(t, path+newSuffix) {
			t.Error("the stale name is still there")
		}
	})
	t.Run("the file moved away", func(t *testing.T) {
		path := made(t)
		moved := path + ".moved"
		if err := os.Rename(path, moved); err != nil {
			t.Fatal(err)
		}
		s := open(t, path, time.Second)
		if err := initSite(s, "b"); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if kids := keysOf(moved); len(kids) != 1 || kids[0] != "a" {
			t.Errorf("the moved file's keys %v, want [a]", kids)
		}
		if kids := keysOf(path); len(kids) != 1 || kids[0] != "b" {
			t.Errorf("the new file's keys %v, want [b]", kids)
		}
	})
}

// While a running store has not given its file its name, the file is
// reported as being made (an export or a move waits for Caddy to stop)
// rather than as missing; once named, it is not.
func TestNewFileMaking(t *testing.T) {
	path := filepath.Join(t.TempDir(), "school.db")
	if Making(path) {
		t.Fatal("Making of a path with nothing at it")
	}
	s := open(t, path, time.Second)
	if !Making(path) {
		t.Error("Making of a store not yet committed: false")
	}
	if _, err := Export(path); err == nil || !strings.Contains(err.Error(), "making the file") {
		t.Errorf("Export while the file is made: %v", err)
	}
	if err := initPlaced(s, "a"); err != nil {
		t.Fatal(err)
	}
	if Making(path) {
		t.Error("Making after the first commit: true")
	}
	s.Close()
	if err := os.WriteFile(path+newSuffix, []byte("left by a crash"), 0o600); err != nil {
		t.Fatal(err)
	}
	if Making(path) {
		t.Error("Making of an unlocked leftover: true")
	}
}

// A new school's first start (InitSite on a new file) returns once its
// commit is made aside, without waiting for the syncs that put the file
// in place; every later commit, and Close, waits for them. Here the syncs
// are held until the test lets them go.
func TestNewFileFirstStartWaitsForNoSync(t *testing.T) {
	release := make(chan struct{})
	var syncs atomic.Int32
	fileSync = func(f *os.File) error {
		syncs.Add(1)
		<-release
		return f.Sync()
	}
	t.Cleanup(func() { fileSync = (*os.File).Sync })
	path := filepath.Join(t.TempDir(), "school.db")
	s := open(t, path, time.Second)

	started := make(chan error, 1)
	go func() { started <- initSite(s, "a") }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the first start waited for its file's syncs")
	}
	if keys, err := s.LoadKeys(context.Background()); err != nil || len(keys) != 1 || keys[0].KID != "a" {
		t.Errorf("keys before the file is in place: %v, %v", keys, err)
	}
	later := make(chan error, 1)
	go func() { later <- s.PutSetting(context.Background(), "k", []byte("v")) }()
	closed := make(chan error, 1)
	go func() { <-later; closed <- s.Close() }()
	time.Sleep(100 * time.Millisecond) // time for a commit that did not wait
	if n, _ := Commits(s); n != 1 {
		t.Errorf("%d commits before the file was in place, want the first alone", n)
	}
	if exists(t, path) {
		t.Error("the file has its name before its syncs")
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if n := syncs.Load(); n != 2 {
		t.Errorf("the placing synced %d times, want 2 (the file, its directory)", n)
	}
	s = open(t, path, time.Second)
	defer s.Close()
	if v, err := s.GetSetting(context.Background(), "k"); err != nil || string(v) != "v" {
		t.Errorf("the later commit: %q, %v", v, err)
	}
	if keys, err := s.LoadKeys(context.Background()); err != nil || len(keys) != 1 || keys[0].KID != "a" {
		t.Errorf("reopened: keys %v, %v", keys, err)
	}
}

// Any other first commit of a new file (a tool's, a test's) returns only
// once the file is in place: a write that returned is on disk.
func TestNewFileOtherFirstCommitWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "school.db")
	s := open(t, path, time.Second)
	defer s.Close()
	if err := s.PutSetting(context.Background(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if !exists(t, path) || exists(t, path+newSuffix) {
		t.Errorf("after a first PutSetting: the file at its name %v, aside %v", exists(t, path), exists(t, path+newSuffix))
	}
}

// New files are put in place at most cap(placings) at a time, the others
// waiting their turn (a goroutine each, no thread held in a system call).
func TestNewFilePlacingsBounded(t *testing.T) {
	release := make(chan struct{})
	var syncing atomic.Int32
	fileSync = func(f *os.File) error {
		syncing.Add(1)
		<-release
		return f.Sync()
	}
	t.Cleanup(func() { fileSync = (*os.File).Sync })
	dir := t.TempDir()
	n := cap(placings) + 4
	stores := make([]*boltStore, n)
	for i := range stores {
		stores[i] = open(t, filepath.Join(dir, strconv.Itoa(i), "school.db"), time.Second)
		if err := initSite(stores[i], "a"); err != nil {
			t.Fatal(err)
		}
	}
	for syncing.Load() < int32(cap(placings)) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // time for placings past the bound
	if got := syncing.Load(); got != int32(cap(placings)) {
		t.Errorf("%d files synced at once, want %d", got, cap(placings))
	}
	close(release)
	for _, s := range stores {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
	for i := range stores {
		if !exists(t, filepath.Join(dir, strconv.Itoa(i), "school.db")) {
			t.Errorf("store %d was not put in place", i)
		}
	}
}
