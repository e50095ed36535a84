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

// FileName is the name of a school's store file in its data directory.
// The gateway opens it there, and the commands that back up, move or
// import a school find it there: the name is the store's to say, once.
const FileName = "school.db"

// Path is the store file of the school whose data directory is dir.
func Path(dir string) string { return filepath.Join(dir, FileName) }

// heldProbe bounds Held's wait for the file's lock. A running gateway
// holds it as long as it runs, so waiting longer would tell nothing more.
const heldProbe = 100 * time.Millisecond

// Held reports whether a process has the store file at path open (Open
// takes bbolt's lock on it, which the probe's read-only open would wait
// for), or is making it and has not given it its name yet (Making). A
// file that is not there, and that no one is making, is not held. A
// file that is no bbolt file is an error.
func Held(path string) (bool, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return Making(path), nil
	} else if err != nil {
		return false, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: heldProbe})
	if errors.Is(err, bolt.ErrTimeout) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("opening %s: %w", path, err)
	}
	return false, db.Close()
}
