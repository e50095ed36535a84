package registry

import (
	"path/filepath"
	"slices"
	"strings"
)

// Which files are served is decided by their host claims: of files
// claiming one host, the older claim (by UpdatedAt, then by file name)
// wins, and a file that loses one of its hosts is skipped whole. A
// file's outcome depends only on the files it shares a host with, and on
// theirs, and so on: a change is decided again over that group alone
// (a school and its aliases, mostly one file), never the whole
// directory, so that a write into 100,000 files costs what a write into
// ten does. The group of every file is the directory: the first reading
// decides it all.

// setFile makes f the file name as read (nil: the file is gone), keeping
// the index of the hosts claimed and noting the hosts whose claims
// changed, the old record's and the new one's, for publish. The caller
// holds d.scan.
func (d *Dir) setFile(name string, f *dirFile) {
	if old := d.files[name]; old != nil && !old.skipped() {
		if d.served(&old.rec) {
			d.replaced = append(d.replaced, &old.rec)
		}
		for _, h := range old.rec.HostKeys() {
			d.dirty[h] = true
			d.claimants.remove(h, name)
		}
	}
	delete(d.conflicts, name) // a file read again is warned of again
	if d.snapshot && !d.unsaved {
		d.unsaved = true
		select {
		case d.saved <- struct{}{}:
		default:
		}
	}
	if f == nil {
		delete(d.files, name)
		return
	}
	d.files[name] = f
	if f.skipped() {
		return
	}
	for _, h := range f.rec.HostKeys() {
		d.dirty[h] = true
		d.claimants.add(h, name)
	}
}

// served reports whether r is the record served for its issuer.
func (d *Dir) served(r *Record) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.records[r.Issuer] == r
}

// owner is the issuer whose served record answers on the host key h, ""
// if none does: of the files claiming h, the one served (a host has one
// owner, and the files claiming it are mostly one). The caller holds
// d.scan, and the claims are published.
func (d *Dir) owner(h string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name := range d.claimants.of(h) {
		if f := d.files[name]; f != nil && d.records[f.rec.Issuer] == &f.rec {
			return f.rec.Issuer
		}
	}
	return ""
}

// claimGroup is the files that share a host, directly or through others,
// with the hosts of seeds, with the file over read as with (a write not
// made yet), and every host they claim.
func (d *Dir) claimGroup(seeds []string, over string, with *dirFile) (names []string, hosts map[string]bool) {
	file := func(name string) *dirFile {
		if name == over && with != nil {
			return with
		}
		return d.files[name]
	}
	hosts = map[string]bool{}
	in := map[string]bool{}
	queue := append([]string(nil), seeds...)
	if with != nil && !with.skipped() {
		queue = append(queue, with.rec.HostKeys()...)
	}
	for len(queue) > 0 {
		h := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if hosts[h] {
			continue
		}
		hosts[h] = true
		claim := func(name string) {
			if in[name] {
				return
			}
			f := file(name)
			if f == nil || f.skipped() {
				return
			}
			in[name] = true
			names = append(names, name)
			queue = append(queue, f.rec.HostKeys()...)
		}
		for name := range d.claimants.of(h) {
			claim(name)
		}
		if with != nil && !with.skipped() && slices.Contains(with.rec.HostKeys(), h) {
			claim(over)
		}
	}
	return names, hosts
}

// decide is the outcome of a group's claims: the records served by
// issuer, the owner of each host, and the losing files by name, each
// with the claim it lost to.
func (d *Dir) decide(names []string, over string, with *dirFile) (records map[string]*Record, owners map[string]string, lost map[string]*HostTakenError) {
	type claim struct {
		name string
		rec  *Record
	}
	claims := make([]claim, 0, len(names))
	for _, name := range names {
		f := d.files[name]
		if name == over && with != nil {
			f = with
		}
		claims = append(claims, claim{name, &f.rec})
	}
	slices.SortFunc(claims, func(a, b claim) int {
		if c := a.rec.UpdatedAt.Compare(b.rec.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	records = make(map[string]*Record, len(claims))
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
		records[c.rec.Issuer] = c.rec
	}
	return records, owners, lost
}

// claims returns the HostTakenError that would skip the file name if it
// held f, or nil. The caller holds d.scan.
func (d *Dir) claims(name string, f *dirFile) error {
	var seeds []string
	if old := d.files[name]; old != nil && !old.skipped() {
		seeds = old.rec.HostKeys()
	}
	names, _ := d.claimGroup(seeds, name, f)
	if _, _, lost := d.decide(names, name, f); lost[name] != nil {
		return lost[name]
	}
	return nil
}

// publish serves the files as they are, deciding again the claims of
// the groups whose hosts changed since the last publish; it warns of each
// file newly skipped for a host another has, and returns the issuers
// whose records changed, in order. The caller holds d.scan.
func (d *Dir) publish() []string {
	if len(d.dirty) == 0 {
		return nil
	}
	seeds := make([]string, 0, len(d.dirty))
	for h := range d.dirty {
		seeds = append(seeds, h)
	}
	clear(d.dirty)
	names, _ := d.claimGroup(seeds, "", nil)
	records, _, lost := d.decide(names, "", nil)
	for _, name := range names {
		taken := lost[name]
		if taken == nil {
			delete(d.conflicts, name)
			continue
		}
		if d.conflicts[name] != taken.Error() {
			d.log.Warn("registry: a school's file is skipped", "file", filepath.Join(d.dir, name),
				"error", taken.Error()+" (an older claim)")
		}
		d.conflicts[name] = taken.Error()
	}
	// The group's hosts were owned by the records served from it before:
	// those of its files still there, and those of the files replaced or
	// removed since the last publish, whose hosts are the group's too
	// (setFile marked them). Their issuers are decided again.
	d.mu.Lock()
	before := map[string]*Record{}
	for _, r := range d.replaced {
		if d.records[r.Issuer] == r {
			before[r.Issuer] = r
		}
	}
	clear(d.replaced)
	d.replaced = d.replaced[:0]
	for _, name := range names {
		if f := d.files[name]; d.records[f.rec.Issuer] == &f.rec {
			before[f.rec.Issuer] = &f.rec
		}
	}
	for issuer := range before {
		delete(d.records, issuer)
	}
	for issuer, r := range records {
		d.records[issuer] = r
	}
	d.mu.Unlock()
	var changed []string
	for issuer, r := range records {
		if o, ok := before[issuer]; !ok || !sameStored(o, r) {
			changed = append(changed, issuer)
		}
	}
	for issuer := range before {
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
