package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	// key; dirty the host keys whose claims changed since the last
	// publish (dirclaims.go).
	claimants map[string][]string
	dirty     map[string]bool
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

	mu       sync.Mutex         // guards records, owners, watchers, next
	records  map[string]*Record // the served file's record, by issuer
	owners   map[string]string  // host key → issuer
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
		conflicts: map[string]string{}, claimants: map[string][]string{}, dirty: map[string]bool{}, records: map[string]*Record{}, owners: map[string]string{},
		watchers: map[int]func(Change){}, pollEvery: pollEvery, snapshot: snapshot, saved: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
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
	return filepath.Join(d.dir, fileName(r.HostKeys()[0]))
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

// Put implements Registry. It brings the directory up to date under the
// lock first (write), so that it judges hosts and counts the version
// against what other processes wrote.
func (d *Dir) Put(ctx context.Context, r Record) (Record, error) {
	return d.put(ctx, r, nil)
}

// PutIf implements Conditional: the version is the file's as read again
// under the lock.
func (d *Dir) PutIf(ctx context.Context, r Record, version int64) (Record, error) {
	return d.put(ctx, r, &version)
}

// put is Put, on condition of the stored version when version is set.
func (d *Dir) put(ctx context.Context, r Record, version *int64) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	r.Hosts = append([]string(nil), r.Hosts...)
	if err := r.Check(); err != nil {
		return Record{}, err
	}
	if d.validate != nil {
		if err := d.validate(&r); err != nil {
			return Record{}, err
		}
	}
	name := fileName(r.HostKeys()[0]) + ".json"
	var stored Record
	err := d.write(name, true, func() error {
		f := d.files[name]
		current := f != nil && !f.skipped() && f.rec.Issuer == r.Issuer
		if version != nil {
			var stored int64
			if current {
				stored = f.rec.Version
			}
			if err := checkVersion(r.Issuer, *version, stored, current); err != nil {
				return err
			}
		}
		d.mu.Lock()
		for _, h := range r.HostKeys() {
			if owner, ok := d.owners[h]; ok && owner != r.Issuer {
				d.mu.Unlock()
				return &HostTakenError{Host: h, Owner: owner}
			}
		}
		d.mu.Unlock()
		r.Version = 1
		if current {
			r.Version = f.rec.Version + 1
		}
		r.UpdatedAt = time.Now().UTC()
		data, err := encodeRecord(&r)
		if err != nil {
			return err
		}
		// What is stored is what a reading of the file returns: the
		// configuration as the file spells it.
		if stored, err = decodeRecord(data); err != nil {
			return err
		}
		if err := d.claims(name, &dirFile{rec: stored}); err != nil {
			return err
		}
		st, err := writeFile(d.dir, name, data)
		if err != nil {
			return err
		}
		d.setFile(name, &dirFile{stat: st, rec: stored})
		return nil
	})
	if err != nil {
		return Record{}, err
	}
	return stored, nil
}

// Remove implements Registry. The school's data directory is kept.
func (d *Dir) Remove(ctx context.Context, issuer string) error {
	return d.remove(ctx, issuer, nil)
}

// RemoveIf implements Conditional.
func (d *Dir) RemoveIf(ctx context.Context, issuer string, version int64) error {
	return d.remove(ctx, issuer, &version)
}

// remove is Remove, on condition of the stored version when version is
// set.
func (d *Dir) remove(ctx context.Context, issuer string, version *int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	key, err := policy.ParseOrigin(issuer)
	if err != nil {
		return ErrNotFound
	}
	gone := Record{Issuer: key}
	return d.write(fileName(gone.HostKeys()[0])+".json", false, func() error {
		d.mu.Lock()
		r, ok := d.records[key]
		d.mu.Unlock()
		if !ok {
			return ErrNotFound
		}
		if version != nil {
			if err := checkVersion(key, *version, r.Version, true); err != nil {
				return err
			}
		}
		name := fileName(r.HostKeys()[0]) + ".json"
		if err := os.Remove(filepath.Join(d.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("registry: %w", err)
		}
		if err := syncDir(d.dir); err != nil {
			return err
		}
		d.setFile(name, nil)
		return nil
	})
}

// write runs change, which writes or removes the file name, with the
// directory locked against other writers and brought up to date (the
// file name read whatever its stat says when reread), then publishes the
// files as change left them and tells the watchers. The directory is
// listed again only when something else changed it since this Dir last
// read or wrote it (dirseen_linux.go); else the write costs the same
// whatever the number of files.
func (d *Dir) write(name string, reread bool, change func() error) error {
	d.scan.Lock()
	unlock, err := lockDir(d.dir)
	if err != nil {
		d.scan.Unlock()
		return fmt.Errorf("registry: locking %s: %w", d.dir, err)
	}
	force := map[string]bool{}
	if reread {
		force[name] = true
	}
	var changed []string
	if d.seen == nil || d.seen.changed("") || d.stale {
		changed, err = d.readAll(force)
		d.stale = err != nil
	} else {
		changed = d.readNames(force)
	}
	if err == nil {
		if err = change(); err == nil {
			changed = append(changed, d.publish()...)
		}
	}
	if d.seen != nil && d.seen.changed(name) {
		d.stale = true
	}
	unlock()
	d.scan.Unlock()
	d.announce(changed)
	return err
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

var _ Registry = (*Dir)(nil)

// encodeRecord is a school's file.
func encodeRecord(r *Record) ([]byte, error) {
	data, err := json.MarshalIndent(r, "", "\t")
	if err != nil {
		return nil, fmt.Errorf("registry: encoding the record of %s: %w", r.Issuer, err)
	}
	return append(data, '\n'), nil
}

// decodeRecord reads a school's file, refusing fields the Record does not
// have (a misspelt "host" would otherwise be dropped in silence) and
// anything after the object.
func decodeRecord(data []byte) (Record, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Record
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("not a school record: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Record{}, errors.New("not a school record: more follows the object")
	}
	return r, nil
}

// writeFile replaces name in dir with data atomically: a reader finds
// the old file or the new one, and after a crash the directory holds one
// of them.
func writeFile(dir, name string, data []byte) (fileStat, error) {
	tmp, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return fileStat{}, fmt.Errorf("registry: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		return fileStat{}, fmt.Errorf("registry: writing %s: %w", name, err)
	}
	if err := syncDir(dir); err != nil {
		return fileStat{}, err
	}
	info, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		return fileStat{}, fmt.Errorf("registry: %w", err)
	}
	return statOf(info), nil
}

// syncDir makes a rename or a removal in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("registry: syncing %s: %w", dir, err)
	}
	return nil
}

func statOf(info fs.FileInfo) fileStat {
	return fileStat{size: info.Size(), mtime: info.ModTime().UnixNano(), id: fileID(info)}
}
