package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// recordFile reports whether a directory entry's name is a school's file.
func recordFile(name string) bool {
	return strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".")
}

// readAll lists the directory and reads each school's file that is new
// or whose stat changed, and each named in force; files gone are
// forgotten. It publishes the outcome and returns the issuers whose
// records changed. The caller holds d.scan.
//
// A listing that finds every file known is the one nothing was removed
// from, and keeps no set of the names: only one that misses some lists
// the directory again to find which (listDir: a comparison of 100,000
// unchanged files allocates next to nothing).
func (d *Dir) readAll(force map[string]bool) ([]string, error) {
	var reads []fileRead
	known := 0
	err := listDir(d.dir, func(name string, st fileStat) {
		f := d.files[name]
		if f != nil {
			known++
		}
		if f == nil || !f.stat.same(st) || force[name] {
			reads = append(reads, fileRead{name: strings.Clone(name), st: st})
		}
	})
	if err != nil {
		return nil, err
	}
	missing := known < len(d.files)
	d.loadAll(reads)
	moved := len(reads) > 0
	for _, r := range reads {
		d.keep(r) // a file gone since is forgotten
	}
	if missing {
		seen := map[string]bool{}
		err := listDir(d.dir, func(name string, _ fileStat) { seen[strings.Clone(name)] = true })
		// A listing that fails now leaves the files removed to the
		// next one.
		for name := range d.files {
			if err == nil && !seen[name] {
				d.setFile(name, nil)
				moved = true
			}
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
			d.setFile(name, nil)
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
	return st.size == o.size && st.id == o.id && st.mtime == o.mtime
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
		d.setFile(r.name, nil)
		return false
	}
	if r.err != nil {
		d.log.Warn("registry: a school's file is skipped", "file", filepath.Join(d.dir, r.name), "error", r.err)
	}
	d.setFile(r.name, &dirFile{stat: r.st, rec: r.rec})
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
		r.UpdatedAt = time.Unix(0, st.mtime).UTC()
	}
	if err := r.Check(); err != nil {
		return Record{}, err
	}
	if want := fileName(r.issuerKey()) + ".json"; name != want {
		return Record{}, fmt.Errorf("the file of %s must be named %s", r.Issuer, want)
	}
	if d.validate != nil {
		if err := d.validate(&r); err != nil {
			return Record{}, err
		}
	}
	return r, nil
}
