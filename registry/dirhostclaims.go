package registry

import (
	"iter"
	"slices"
)

// hostClaims are the files (by name) whose records claim each host key.
// Nearly every host is claimed by one file, its school's: that one is
// kept as a string, and only a host two files or more claim gets a
// list. 100,000 hosts so cost a map of strings, not one of slices and
// 100,000 slices of one name.
type hostClaims struct {
	one  map[string]string   // host key → the one file claiming it
	more map[string][]string // host key → the files claiming it, two or more
}

func newHostClaims(size int) hostClaims {
	return hostClaims{one: make(map[string]string, size), more: map[string][]string{}}
}

// of are the files claiming h.
func (c *hostClaims) of(h string) iter.Seq[string] {
	return func(yield func(string) bool) {
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
	if _, ok := c.one[h]; ok {
		return 1
	}
	return len(c.more[h])
}

// add notes that the file name claims h.
func (c *hostClaims) add(h, name string) {
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
