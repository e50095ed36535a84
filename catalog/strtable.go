package catalog

import (
	"sort"
	"strings"
)

// strTable is a sorted or unsorted list of strings kept as one string and
// offsets. The index's word lists hold tens of thousands of strings; as
// a []string each is a pointer the garbage collector scans on every cycle
// of a busy gateway, as a table the whole list is one.
type strTable struct {
	data string
	off  []uint32 // string i is data[off[i]:off[i+1]]
}

func newStrTable(list []string) strTable {
	n := 0
	for _, s := range list {
		n += len(s)
	}
	var b strings.Builder
	b.Grow(n)
	off := make([]uint32, 0, len(list)+1)
	off = append(off, 0)
	for _, s := range list {
		b.WriteString(s)
		off = append(off, uint32(b.Len()))
	}
	return strTable{data: b.String(), off: off}
}

func (t *strTable) len() int {
	if len(t.off) == 0 {
		return 0
	}
	return len(t.off) - 1
}

func (t *strTable) at(i int) string { return t.data[t.off[i]:t.off[i+1]] }

// search returns the index of the first string >= s in a sorted table.
func (t *strTable) search(s string) int {
	return sort.Search(t.len(), func(i int) bool { return t.at(i) >= s })
}

// find returns the index of s in a sorted table.
func (t *strTable) find(s string) (int, bool) {
	i := t.search(s)
	return i, i < t.len() && t.at(i) == s
}
