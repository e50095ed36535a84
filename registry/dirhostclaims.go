package registry

import (
	"iter"
	"slices"
	"strings"
)

// hostClaims are the files (by name) whose records claim each host key.
// Nearly every host is claimed by one file, its school's, named after
// it (fileName: school.example.json claims school.example): such a
// claim, a file's own, is not kept at all but found in the files
// themselves, so that 100,000 schools keep no map of 100,000 claims.
// Of the others, a host one file claims keeps that name as a string,
// and only a host two files or more claim gets a list.
type hostClaims struct {
	one  map[string]string   // host key → the one other file claiming it
	more map[string][]string // host key → the other files claiming it, two or more
	// files are the Dir's files (d.files, replaced whole by loadFiles),
	// where a host's own file is found.
	files *map[string]*dirFile
}

func newHostClaims(files *map[string]*dirFile) hostClaims {
	return hostClaims{one: map[string]string{}, more: map[string][]string{}, files: files}
}

// ownFile reports whether name is h's own file: fileName(h) + ".json".
func ownFile(h, name string) bool {
	base, ok := strings.CutSuffix(name, ".json")
	return ok && base == fileName(h)
}

// own is h's own file if it exists and its record claims h (its name
// built in buf, so that a count allocates nothing).
func (c *hostClaims) own(h string, buf []byte) ([]byte, bool) {
	buf = append(append(buf[:0], fileName(h)...), ".json"...)
	f := (*c.files)[string(buf)]
	return buf, f != nil && !f.skipped() && f.rec.claims(h)
}

// claims reports whether h is one of r's HostKeys, without making them.
func (r *Record) claims(h string) bool {
	return r.issuerKey() == h || slices.Contains(r.Hosts, h)
}

// of are the files claiming h.
func (c *hostClaims) of(h string) iter.Seq[string] {
	return func(yield func(string) bool) {
		var buf [64]byte
		if name, ok := c.own(h, buf[:0]); ok && !yield(string(name)) {
			return
		}
		if name, ok := c.one[h]; ok {
			yield(name)
			return
		}
		for _, name := range c.more[h] {
			if !yield(name) {
				return
			}
		}
	}
}

// count is the number of files claiming h.
func (c *hostClaims) count(h string) int {
	var buf [64]byte
	n := 0
	if _, ok := c.own(h, buf[:0]); ok {
		n = 1
	}
	if _, ok := c.one[h]; ok {
		return n + 1
	}
	return n + len(c.more[h])
}

// add notes that the file name claims h; its own file's claim is found
// in the files.
func (c *hostClaims) add(h, name string) {
	if ownFile(h, name) {
		return
	}
	if first, ok := c.one[h]; ok {
		delete(c.one, h)
		c.more[h] = []string{first, name}
		return
	}
	if names, ok := c.more[h]; ok {
		c.more[h] = append(names, name)
		return
	}
	c.one[h] = name
}

// remove notes that the file name claims h no more.
func (c *hostClaims) remove(h, name string) {
	if ownFile(h, name) {
		return
	}
	if first, ok := c.one[h]; ok {
		if first == name {
			delete(c.one, h)
		}
		return
	}
	names := slices.DeleteFunc(c.more[h], func(n string) bool { return n == name })
	switch len(names) {
	case 0:
		delete(c.more, h)
	case 1:
		delete(c.more, h)
		c.one[h] = names[0]
	default:
		c.more[h] = names
	}
}
