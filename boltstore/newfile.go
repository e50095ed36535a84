package boltstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A new store file is made beside its path and takes its name whole.
//
// bbolt syncs a file it creates four times by the end of its first
// commit: once creating it (its first pages), once growing it, and twice
// in the commit, the new pages before the meta page that points at them,
// so that a crash between the two leaves the old meta page, which points
// at none of them. A thousand new schools wait for four thousand syncs.
//
// Nothing of that order is needed for a file no one can open before it is
// complete. So the file is made at path+".new" (newSuffix), locked as
// bbolt locks its files so that two processes do not make it at once; it
// starts from bbolt's first pages of an empty file (newImage), and bbolt
// syncs nothing while the first commit is made there. Then the whole file
// is synced once, linked to its name, and the directory synced: two
// syncs, after which bbolt syncs every commit as always. A power loss at
// any moment leaves no file at the path (a link not on disk yet) or one
// holding the whole first commit (the link is made only after the file's
// sync); a .new file left behind is made anew by the next start. (The
// data directory Open makes is not synced in its parent: on a journaling
// file system, ext4 or XFS, the sync of the directory commits the journal
// up to the link, the directory's making included.)
//
// The two syncs and the link are made in the background (placeLater):
// the first commit returns once it is made in the file aside, so that a
// new school's first start, and its first answer, wait for no sync. Every
// later commit, and Close, waits for the file to be in place. That is
// safe because what the first commit holds (a school's first signing key
// and initial settings) is lost only with a crash before the file is in
// place, and then nothing durable or signed depends on it: every
// signature (an ID token, an identity assertion) is made for a code or a
// token that a later commit stored, which waited for the placing; a
// client that read the lost key in the JWKS meanwhile holds nothing it
// signed, and a DPoP nonce made with the lost nonce key is refused as
// stale, with a new nonce. The next start makes the file anew, as after a
// crash before the first commit.
//
// The other ways weighed: bbolt's NoSync with one sync after the first
// commit can leave a valid meta page pointing at pages never written
// (nothing orders them on disk); NoGrowSync in place is documented by
// bbolt as unsafe on ext3/ext4 (a size not on disk behind a meta page
// that needs it); and a larger first file saves only the grow's sync,
// leaving three.
//
// Making the file aside needs a file lock of its own and bbolt's first
// pages made without a disk (newfile_linux.go); elsewhere a new file is
// made in place, as bbolt makes it (newfile_other.go).

// newSuffix names the file a new store is made in before it has its name.
const newSuffix = ".new"

// aside is a store file being made beside its path.
type aside struct {
	// f is bbolt's handle of the .new file, which holds its lock.
	f    *os.File
	path string
}

// placement is the putting in place of a file made aside, after its
// first commit, in the background.
type placement struct {
	done chan struct{}
	// err is why putting the file in place failed. The store commits
	// nothing after it: a failed sync may have dropped the pages it was
	// to write, and one that seems to succeed later proves nothing.
	err error
}

// wait waits for the file to be in place.
func (p *placement) wait() error {
	<-p.done
	return p.err
}

// placings bounds the files being put in place at once in a process. A
// burst of a thousand new schools would otherwise have a thousand syncs
// waiting on the disk at once, each holding a thread of its own (a
// goroutine in a system call does), and the schools' own first writes
// queued behind them all; sixteen is what a burst's first requests kept
// in flight when each made its own file in place.
var placings = make(chan struct{}, 16)

// placeLater puts a, its first commit made, in its place in the
// background: the commit's caller (a new school's first start) goes on
// without waiting for the syncs, and every later commit, and Close, waits
// for them (commit). Called with s.first held; the placing takes no lock
// (a commit waits for it holding s.first), and nothing reads bbolt's sync
// switches but a commit.
func (s *boltStore) placeLater(a *aside) {
	p := &placement{done: make(chan struct{})}
	s.placing.Store(p)
	go func() {
		placings <- struct{}{}
		err := a.place()
		<-placings
		if err == nil {
			s.db.NoSync, s.db.NoGrowSync = s.noSync, false
		}
		p.err = err
		if err == nil {
			s.placing.Store(nil)
		}
		close(p.done)
	}()
}

// openNew makes the store of a path that has no file yet. It returns nil
// and no error where files are made in place, and when the file appeared
// while this process waited for another one making it: the caller then
// opens the path as it is.
func openNew(path string, timeout time.Duration) (*boltStore, error) {
	f, err := lockedNewFile(path+newSuffix, timeout)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(path); err == nil {
		_ = os.Remove(f.Name())
		f.Close()
		return nil, nil
	}
	// Whatever a process that died making the file left in it goes.
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	if img := newImage(); img != nil {
		if _, err := f.WriteAt(img, 0); err != nil {
			f.Close()
			return nil, err
		}
	}
	db, err := bolt.Open(f.Name(), 0o600, &bolt.Options{NoSync: true, NoGrowSync: true, InitialMmapSize: newFileSize,
		OpenFile: func(string, int, os.FileMode) (*os.File, error) { return f, nil }})
	if err != nil {
		return nil, err // bbolt closed f
	}
	s := &boltStore{db: db, aside: &aside{f: f, path: path}}
	s.fresh.Store(true)
	return s, nil
}

// place puts the file made aside in its place, its first commit made:
// the file synced, linked to its name (never over a file that appeared
// there meanwhile) and the directory synced.
func (a *aside) place() error {
	size, err := mappedSize(a.f)
	if err != nil {
		return fmt.Errorf("creating %s: %w", a.path, err)
	}
	if err := a.f.Truncate(size); err != nil {
		return fmt.Errorf("creating %s: %w", a.path, err)
	}
	if err := fileSync(a.f); err != nil {
		return fmt.Errorf("creating %s: %w", a.path, err)
	}
	if err := link(a.f.Name(), a.path); err != nil {
		return fmt.Errorf("creating %s: %w", a.path, err)
	}
	if err := syncDir(filepath.Dir(a.path)); err != nil {
		return fmt.Errorf("creating %s: %w", a.path, err)
	}
	return nil
}

// link gives the file at from the name to, unless a file has it; from
// loses its name. A file system without hard links renames it instead:
// only a process that ignores the .new file's lock could have made a file
// at to meanwhile.
func link(from, to string) error {
	err := hardLink(from, to)
	switch {
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("another process made the file meanwhile: %w", err)
	case err != nil && linksUnsupported(err):
		return os.Rename(from, to)
	case err != nil:
		// Any other failure (no space, I/O) is not a reason to rename,
		// which would replace a file made at to meanwhile.
		return err
	}
	_ = os.Remove(from)
	return nil
}

// dropStaleNewName removes the .new name of a file that has its own name
// too: a crash between the link and the removal in place left it, and a
// file moved away later must not be found under it and made anew.
func dropStaleNewName(path string) {
	st, err := os.Stat(path)
	if err != nil {
		return
	}
	if nst, err := os.Stat(path + newSuffix); err == nil && os.SameFile(st, nst) {
		_ = os.Remove(path + newSuffix)
	}
}

// hardLink is os.Link, a variable for the test of a file system without
// hard links.
var hardLink = os.Link

// newFileSize is what a new file is made at least. bbolt would make it
// 32 KB when its first commit grows it, and 64 KB at the first write
// after the start that needs more (a catalog feed of a few dozen courses
// does), each growth a sync more. Made aside, the size costs no sync (the
// file is synced once anyway, and the file system keeps the pages never
// written as holes), and bbolt maps it whole from the start instead of
// mapping it again as the first commits fill it.
const newFileSize = 64 << 10

// mappedSize is the size a new file is given: newFileSize, or the next
// doubling of it that holds what the first commit wrote, as bbolt grows
// a small file.
func mappedSize(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := int64(newFileSize)
	for size < st.Size() {
		size *= 2
	}
	return size, nil
}

// syncDir syncs the directory dir, so that a name made in it is on disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return fileSync(d)
}

// fileSync is (*os.File).Sync, a variable for the tests that hold a
// placing's syncs.
var fileSync = (*os.File).Sync
