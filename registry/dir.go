package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/schoolgate/schoolgate/policy"
)

// Dir is a Registry kept in a directory: one JSON file per school, which
// operators and deploy tools may write by hand as well as through Put.
//
// The files' names and contents, which files are served, how a tool
// writes one and how soon a change is seen are specified once, for the
// authors of such tools, in docs/registry-files.md; this type is that
// page's implementation, and a change to either is a change to both.
// In short: Put and Remove write a temporary file, sync it, rename it
// into place and sync the directory, under an advisory lock on the
// directory (flock) that serializes the writes of every Dir on it, and
// tell this Dir's watchers before they return; other processes' changes
// are seen through fsnotify, with a comparison of each file's size,
// modification time and identity as the safety net, every second or,
// for a large directory, a hundred times as long as a comparison takes
// (polling costs at most 1% of a processor).
type Dir struct {
	dir      string
	validate Validator
	log      *slog.Logger

	// scan serializes the readings of the directory and the writes, so
	// that each starts from the state the previous one left. It guards
	// files and conflicts.
	scan      sync.Mutex
	files     map[string]*dirFile // by file name
	conflicts map[string]string   // file name → the host claim that made it skipped, last warned
	// claimants are the files (by name) whose records claim each host
	// key, the served one among them its owner (owner); dirty the host
	// keys whose claims changed since the last publish, and replaced the
	// served records whose files were replaced or removed since
	// (dirclaims.go).
	claimants hostClaims
	dirty     map[string]bool
	replaced  []*Record
	// seen tells a write whether the directory changed since this Dir
	// last read it or wrote it, nil where it cannot (dirseen_linux.go);
	// stale is set when it did, after this Dir's own write.
	seen   *dirSeen
	stale  bool
	dirErr string // the last failure to read the directory, warned once
	// snapshot is set for a Dir that keeps the directory's snapshot
	// (OpenDirSnapshot); unsaved is set when the files changed since
	// it was last written (dirsnapshot.go), and saved told of it.
	snapshot bool
	unsaved  bool
	saved    chan struct{}

	mu       sync.Mutex         // guards records, watchers, next
	records  map[string]*Record // the served file's record, by issuer
	watchers map[int]func(Change)
	next     int
	// notify makes the watchers' calls one at a time.
	notify sync.Mutex

	pollEvery time.Duration // pollEvery when opened
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// dirFile is a file as last read: one per school's file, so kept small
// (128 bytes).
type dirFile struct {
	stat fileStat
	// rec is the checked record; zero for a file skipped before host
	// claims are judged (the warning said why).
	rec Record
}

// skipped reports whether the file could not be served whatever the
// claims: unreadable, not a record, refused.
func (f *dirFile) skipped() bool { return f.rec.Issuer == "" }

// fileStat is what tells that a file changed without reading it.
type fileStat struct {
	size  int64
	mtime int64  // Unix nanoseconds
	id    uint64 // the inode, where there is one: a rename replaces it
}

// pollEvery is how often, at most, the directory's entries are compared
// with the last seen, the safety net under file notifications (see
// pollShare). A variable so tests can shorten it.
var pollEvery = time.Second

// pollOnly makes OpenDir poll without watching, as on a file system
// without notifications; for tests.
var pollOnly = false

// settle is how long file notifications are gathered before the files
// they name are read: a burst of writes is read once, and a file written
// in several steps by an editor more likely whole.
const settle = 50 * time.Millisecond

// OpenDir reads the schools of dir, an existing directory, and watches it
// for changes. validate checks the configuration of each file read and
// each Put (nil checks nothing beyond Record.Check), from several
// goroutines at once when many files are read; logger receives the
// warnings about skipped files (nil: slog.Default()). A file that is
// skipped does not fail the open; a directory that cannot be read does.
func OpenDir(dir string, validate Validator, logger *slog.Logger) (*Dir, error) {
	return openDir(dir, validate, logger, false)
}

// OpenDirSnapshot is OpenDir for a server: it serves the records of the
// directory's snapshot at once, if it has one that can be read, and
// compares the directory with it in the background, the files changed
// since winning; and it keeps the snapshot written (dirsnapshot.go). A
// tool that lists the records once uses OpenDir, which reads the files.
func OpenDirSnapshot(dir string, validate Validator, logger *slog.Logger) (*Dir, error) {
	return openDir(dir, validate, logger, true)
}

func openDir(dir string, validate Validator, logger *slog.Logger, snapshot bool) (*Dir, error) {
	if logger == nil {
		logger = slog.Default()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	if info, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	} else if !info.IsDir() {
		return nil, fmt.Errorf("registry: %s is not a directory", abs)
	}
	d := &Dir{dir: abs, validate: validate, log: logger, files: map[string]*dirFile{},
		conflicts: map[string]string{}, dirty: map[string]bool{}, records: map[string]*Record{},
		watchers: map[int]func(Change){}, pollEvery: pollEvery, snapshot: snapshot, saved: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	d.claimants = newHostClaims(&d.files)
	// Watching starts before the first reading, so that nothing written
	// between the two goes unnoticed until the poll.
	w, err := fsnotify.NewWatcher()
	if pollOnly && err == nil {
		w.Close()
		w, err = nil, errors.New("watching is off")
	}
	if err == nil {
		if err = w.Add(abs); err != nil {
			w.Close()
		}
	}
	if err != nil {
		w = nil
		logger.Warn("registry: the directory cannot be watched; changes are found by polling it every "+pollEvery.String(),
			"dir", abs, "error", err)
	}
	d.seen = newDirSeen(abs)
	d.scan.Lock()
	err = nil
	if snapshot && d.loadSnapshot() {
		// Served from the snapshot: the directory is compared with it
		// by the first poll (run), and a write before lists it first.
		d.stale = true
	} else {
		_, err = d.readAll(nil)
	}
	d.scan.Unlock()
	if err != nil {
		if w != nil {
			w.Close()
		}
		if d.seen != nil {
			d.seen.close()
		}
		return nil, fmt.Errorf("registry: %w", err)
	}
	go d.run(w)
	return d, nil
}

// fileNames replaces what a host key has that a file name should not.
var fileNames = strings.NewReplacer(":", "_", "[", "", "]", "")

// fileName is the name, without ".json", of the file and the data
// directory of the school whose host key is key.
func fileName(key string) string { return fileNames.Replace(key) }

// DataDir is the directory beside the files where the school of issuer
// (in any spelling) keeps its data when its configuration names none:
// <dir>/<name>, as the file is <dir>/<name>.json. It is "" for a string
// that is no origin.
func (d *Dir) DataDir(issuer string) string {
	origin, err := policy.ParseOrigin(issuer)
	if err != nil {
		return ""
	}
	r := Record{Issuer: origin}
	return filepath.Join(d.dir, fileName(r.issuerKey()))
}

// List implements Registry.
func (d *Dir) List(ctx context.Context) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Record, 0, len(d.records))
	for _, r := range d.records {
		out = append(out, *r)
	}
	return out, nil
}

// ListShared implements Sharer: a file's record is replaced when the
// file is read again, never changed.
func (d *Dir) ListShared(ctx context.Context) ([]*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*Record, 0, len(d.records))
	for _, r := range d.records {
		out = append(out, r)
	}
	return out, nil
}

// Get implements Registry.
func (d *Dir) Get(ctx context.Context, issuer string) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	key, err := policy.ParseOrigin(issuer)
	if err != nil {
		return Record{}, ErrNotFound
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.records[key]
	if !ok {
		return Record{}, ErrNotFound
	}
	return *r, nil
}

// Watch implements Registry.
func (d *Dir) Watch(fn func(Change)) (stop func()) {
	d.mu.Lock()
	id := d.next
	d.next++
	d.watchers[id] = fn
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		delete(d.watchers, id)
		d.mu.Unlock()
	}
}

// announce tells the watchers of each issuer, one call at a time.
func (d *Dir) announce(issuers []string) {
	if len(issuers) == 0 {
		return
	}
	d.notify.Lock()
	defer d.notify.Unlock()
	for _, issuer := range issuers {
		d.mu.Lock()
		fns := make([]func(Change), 0, len(d.watchers))
		for _, fn := range d.watchers {
			fns = append(fns, fn)
		}
		d.mu.Unlock()
		for _, fn := range fns {
			fn(Change{Issuer: issuer})
		}
	}
}

// Close stops watching the directory and writes its snapshot if the
// files changed since the last. The records stay readable, and writable,
// but no more changes are announced.
func (d *Dir) Close() error {
	d.closeOnce.Do(func() {
		close(d.stop)
		<-d.done
		d.saveSnapshot()
		if d.seen != nil {
			d.scan.Lock()
			d.seen.close()
			d.seen = nil
			d.scan.Unlock()
		}
	})
	return nil
}

var (
	_ Registry = (*Dir)(nil)
	_ Sharer   = (*Dir)(nil)
)
