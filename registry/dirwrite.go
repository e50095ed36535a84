package registry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/schoolgate/schoolgate/policy"
)

// Writing a registry directory: Put and Remove, each under the
// directory's lock, brought up to date first (write).

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
	name := fileName(r.issuerKey()) + ".json"
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
		for _, h := range r.HostKeys() {
			if owner := d.owner(h); owner != "" && owner != r.Issuer {
				return &HostTakenError{Host: h, Owner: owner}
			}
		}
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
	return d.write(fileName(gone.issuerKey())+".json", false, func() error {
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
		name := fileName(r.issuerKey()) + ".json"
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
