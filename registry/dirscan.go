package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// recordFile reports whether a directory entry's name is a school's file.
func recordFile(name string) bool {
	return strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".")
}

// readAll lists the directory and reads each school's file that is new
// or whose stat changed, and each named in force; files gone are
// forgotten. It publishes the outcome and returns the issuers whose
// records changed. The caller holds d.scan.
func (d *Dir) readAll(force map[string]bool) ([]string, error) {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(entries))
	var reads []fileRead
	for _, e := range entries {
		name := e.Name()
		if !recordFile(name) {
			continue
		}
		info, err := e.Info()
		if err == nil && info.Mode()&fs.ModeSymlink != 0 {
			info, err = os.Stat(filepath.Join(d.dir, name))
		}
		if err != nil || !info.Mode().IsRegular() {
			continue // gone since the listing, a dangling link, a directory
		}
		seen[name] = true
		st := statOf(info)
		if f := d.files[name]; f == nil || !f.stat.same(st) || force[name] {
			reads = append(reads, fileRead{name: name, st: st})
		}
	}
	d.loadAll(reads)
	moved := len(reads) > 0
	for _, r := range reads {
		if !d.keep(r) {
			delete(seen, r.name)
		}
	}
	for name := range d.files {
		if !seen[name] {
			delete(d.files, name)
			moved = true
		}
	}
	if !moved {
		return nil, nil
	}
	return d.publish(), nil
}

// readNames reads again the files of names, which file notifications
// named, whatever their stat, and publishes the outcome. The caller holds
// d.scan.
func (d *Dir) readNames(names map[string]bool) []string {
	var reads []fileRead
	for name := range names {
		info, err := os.Stat(filepath.Join(d.dir, name))
		if err != nil || !info.Mode().IsRegular() {
			delete(d.files, name)
			continue
		}
		reads = append(reads, fileRead{name: name, st: statOf(info)})
	}
	d.loadAll(reads)
	for _, r := range reads {
		d.keep(r)
	}
	return d.publish()
}

func (st fileStat) same(o fileStat) bool {
	return st.size == o.size && st.id == o.id && st.mtime.Equal(o.mtime)
}

// fileRead is a file to read, then its outcome.
type fileRead struct {
	name string
	st   fileStat
	rec  Record
	err  error
}

// loadAll loads the files of reads, on every processor when there are
// many: at 10,000 files, the opening and reading system calls are most of
// a Dir's opening.
func (d *Dir) loadAll(reads []fileRead) {
	workers := min(runtime.GOMAXPROCS(0), len(reads)/64+1)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(reads)); i = next.Add(1) - 1 {
				r := &reads[i]
				r.rec, r.err = d.load(r.name, r.st)
			}
		})
	}
	wg.Wait()
}

// keep records a file as read, warning if it is skipped, and reports
// whether it is there still.
func (d *Dir) keep(r fileRead) bool {
	if errors.Is(r.err, fs.ErrNotExist) {
		delete(d.files, r.name)
		return false
	}
	if r.err != nil {
		d.log.Warn("registry: a school's file is skipped", "file", filepath.Join(d.dir, r.name), "error", r.err)
	}
	d.files[r.name] = &dirFile{stat: r.st, rec: r.rec, err: r.err}
	delete(d.conflicts, r.name) // a file read again is warned of again
	return true
}

// load reads, parses and checks the school's file name.
func (d *Dir) load(name string, st fileStat) (Record, error) {
	data, err := readFile(filepath.Join(d.dir, name), st.size)
	if err != nil {
		return Record{}, err
	}
	r, err := decodeRecord(data)
	if err != nil {
		return Record{}, err
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = st.mtime.UTC()
	}
	if err := r.Check(); err != nil {
		return Record{}, err
	}
	if want := fileName(r.HostKeys()[0]) + ".json"; name != want {
		return Record{}, fmt.Errorf("the file of %s must be named %s", r.Issuer, want)
	}
	if d.validate != nil {
		if err := d.validate(&r); err != nil {
			return Record{}, err
		}
	}
	return r, nil
}

// resolve decides which files are served, with the file over replaced by
// with (none if over is ""): of files claiming one host, the older
// claim (by UpdatedAt, then by file name) wins, and a file that loses
// one of its hosts is skipped whole. It returns the records served by
// issuer, the owner of each host, and the losing files by name, each
// with the claim it lost to. The caller holds d.scan.
func (d *Dir) resolve(over string, with *dirFile) (records map[string]Record, owners map[string]string, lost map[string]*HostTakenError) {
	type claim struct {
		name string
		rec  *Record
	}
	claims := make([]claim, 0, len(d.files)+1)
	for name, f := range d.files {
		if name != over && f.err == nil {
			claims = append(claims, claim{name, &f.rec})
		}
	}
	if with != nil && with.err == nil {
		claims = append(claims, claim{over, &with.rec})
	}
	slices.SortFunc(claims, func(a, b claim) int {
		if c := a.rec.UpdatedAt.Compare(b.rec.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	records = make(map[string]Record, len(claims))
	owners = make(map[string]string, len(claims))
	lost = map[string]*HostTakenError{}
	for _, c := range claims {
		keys := c.rec.HostKeys()
		if i := slices.IndexFunc(keys, func(h string) bool { _, taken := owners[h]; return taken }); i >= 0 {
			lost[c.name] = &HostTakenError{Host: keys[i], Owner: owners[keys[i]]}
			continue
		}
		for _, h := range keys {
			owners[h] = c.rec.Issuer
		}
		records[c.rec.Issuer] = *c.rec
	}
	return records, owners, lost
}

// claims returns the HostTakenError that would skip the file name if it
// held f, or nil. The caller holds d.scan.
func (d *Dir) claims(name string, f *dirFile) error {
	if _, _, lost := d.resolve(name, f); lost[name] != nil {
		return lost[name]
	}
	return nil
}

// publish serves the files as they are, warns of each file newly
// skipped for a host another has, and returns the issuers whose records
// changed, in order. The caller holds d.scan.
func (d *Dir) publish() []string {
	records, owners, lost := d.resolve("", nil)
	conflicts := make(map[string]string, len(lost))
	for name, taken := range lost {
		conflicts[name] = taken.Error()
		if d.conflicts[name] != conflicts[name] {
			d.log.Warn("registry: a school's file is skipped", "file", filepath.Join(d.dir, name),
				"error", taken.Error()+" (an older claim)")
		}
	}
	d.conflicts = conflicts
	d.mu.Lock()
	old := d.records
	d.records, d.owners = records, owners
	d.mu.Unlock()
	var changed []string
	for issuer, r := range records {
		if o, ok := old[issuer]; !ok || !sameStored(&o, &r) {
			changed = append(changed, issuer)
		}
	}
	for issuer := range old {
		if _, ok := records[issuer]; !ok {
			changed = append(changed, issuer)
		}
	}
	slices.Sort(changed)
	return changed
}

// sameStored reports whether a and b are one write of a record.
func sameStored(a, b *Record) bool {
	return SameRecord(a, b) && a.Version == b.Version && a.UpdatedAt.Equal(b.UpdatedAt)
}
