package boltstore

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// lockedNewFile opens the file a new store is made in, creating it, and
// locks it as bbolt locks a store file (flock), waiting up to timeout for
// another process making the same file.
func lockedNewFile(name string, timeout time.Duration) (*os.File, error) {
	start := time.Now()
	for {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		if err := flock(f, start, timeout); err != nil {
			f.Close()
			return nil, err
		}
		// The process that held the lock may have put its file in place
		// (the .new name gone) before letting go: lock the file named now.
		st, err := os.Stat(name)
		fst, ferr := f.Stat()
		if err == nil && ferr == nil && os.SameFile(st, fst) {
			if !linked(fst) {
				return f, nil
			}
			// A crash between the link that gave a made file its name and
			// the removal of this one left the name behind: it is a second
			// name of a school's file, maybe moved away since, never a file
			// to make anew. The name goes; the file stays whole.
			_ = os.Remove(name)
		}
		f.Close()
	}
}

// linked reports whether the file has more than one name.
func linked(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
}

// linksUnsupported reports whether a link failed because the file system
// has no hard links, where a rename is the way to name the file.
func linksUnsupported(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP)
}

// flockRetry is how often a held lock is tried again, as bbolt does.
const flockRetry = 50 * time.Millisecond

// flock locks f exclusively, giving up with ErrLocked once timeout since
// start has passed, as bbolt's Open gives up with ErrTimeout.
func flock(f *os.File, start time.Time, timeout time.Duration) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return err
		}
		if timeout != 0 && time.Since(start) > timeout-flockRetry {
			return ErrLocked
		}
		time.Sleep(flockRetry)
	}
}

var image struct {
	once  sync.Once
	pages []byte
}

// newImage returns bbolt's first pages of an empty file, made once per
// process by bbolt itself in a file in memory, so that a new store file
// starts from them without the sync bbolt does of a file it creates. Nil
// if they could not be made: bbolt then makes them in the new file.
func newImage() []byte {
	image.once.Do(func() { image.pages, _ = makeImage() })
	return image.pages
}

func makeImage() ([]byte, error) {
	fd, err := unix.MemfdCreate("bbolt-image", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "bbolt-image")
	db, err := bolt.Open(f.Name(), 0o600, &bolt.Options{
		OpenFile: func(string, int, os.FileMode) (*os.File, error) { return f, nil }})
	if err != nil {
		return nil, err // bbolt closed f
	}
	defer db.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pages := make([]byte, st.Size())
	if _, err := f.ReadAt(pages, 0); err != nil {
		return nil, err
	}
	return pages, nil
}

// Making reports whether a process is making the store file of path and
// has not given it its name yet: its .new file exists and is locked.
func Making(path string) bool {
	f, err := os.Open(path + newSuffix)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}
