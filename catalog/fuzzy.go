package catalog

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Typo tolerance: a query word of minFuzzyLetters letters or more also
// matches keys within one edit, and from twoEditLetters on within two.
// An edit is an inserted, deleted or substituted letter or two adjacent
// letters swapped (the optimal string alignment form of the
// Damerau-Levenshtein distance), the typos people make. Shorter words
// get none: one edit away from "sea" are "tea", "see" and "set".
const (
	minFuzzyLetters = 4
	twoEditLetters  = 8
	// maxFuzzyTerms bounds the terms one query word can expand to.
	maxFuzzyTerms = 32
)

// maxEdits is how many edits a query word may be from what it matches.
func maxEdits(word string) int {
	if hasDigit(word) || len(word) > maxWordBytes {
		return 0 // a number with a typo is another number
	}
	switch n := utf8.RuneCountInString(word); {
	case n >= twoEditLetters:
		return 2
	case n >= minFuzzyLetters:
		return 1
	}
	return 0
}

// fuzzyKey is a key within reach of a query word.
type fuzzyKey struct {
	key  int32 // index in Index.keys
	dist int
}

// fuzzyKeys returns the keys within maxD edits of q, other than q itself.
//
// The keys are sorted, so keys sharing a prefix are adjacent: walking them
// in order is walking a trie, and each key reuses the distance rows of
// the prefix it shares with the one before. When every cell of a row
// exceeds maxD no word with that prefix can come back within reach (a
// transposition only ever saves an edit a substitution had already
// counted), so the walk jumps past all of them with a binary search. The
// work is bounded by the prefixes within reach of q, not by the size of
// the vocabulary, let alone the number of items.
func (ix *Index) fuzzyKeys(q string, maxD int, b *walkBuffers, out []fuzzyKey) []fuzzyKey {
	qr := b.qr[:0]
	for _, r := range q {
		qr = append(qr, r)
	}
	b.qr = qr
	m := len(qr)
	maxDepth := m + maxD // a longer prefix is more than maxD insertions away
	// rows[k] is the distance row after the first k runes of the current
	// key; runes[k] is that key's k-th rune and ends[k] the byte offset
	// after it.
	rows := b.rows(maxDepth+1, m+1)
	for j := range rows[0] {
		rows[0][j] = j
	}
	runes := grow(&b.runes, maxDepth)
	ends := grow(&b.ends, maxDepth+1)
	ends[0] = 0
	depth := 0 // rows[0..depth] are valid for the current key

	keys := &ix.keys
	// Keys starting with an ASCII digit sort first, and none can match
	// (see maxEdits): start after them.
	for i := keys.search(":"); i < keys.len(); {
		key := keys.at(i)
		// Keep the rows of the prefix this key shares with the last one.
		k, off := 0, 0
		for k < depth && off < len(key) {
			r, size := utf8.DecodeRuneInString(key[off:])
			if r != runes[k] {
				break
			}
			k++
			off += size
		}
		depth = k
		pruned := false
		for off < len(key) {
			if depth == maxDepth {
				pruned = true
				break
			}
			r, size := utf8.DecodeRuneInString(key[off:])
			runes[depth] = r
			off += size
			ends[depth+1] = off
			if unicode.IsDigit(r) {
				// Keys with digits are never fuzzy matches (see
				// maxEdits), and catalogs have thousands of numbers.
				depth++
				pruned = true
				break
			}
			// Only the cells within maxD of the diagonal can be within
			// reach (a cell is at least |i-j|); those just outside the
			// band are set above maxD for the next row to read.
			prev, cur := rows[depth], rows[depth+1]
			row := depth + 1
			lo, hi := max(1, row-maxD), min(m, row+maxD)
			cur[0] = row
			if lo > 1 {
				cur[lo-1] = maxD + 1
			}
			if hi < m {
				cur[hi+1] = maxD + 1
			}
			least := cur[0]
			for j := lo; j <= hi; j++ {
				cost := 1
				if qr[j-1] == r {
					cost = 0
				}
				d := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
				if depth > 0 && j > 1 && qr[j-1] == runes[depth-1] && qr[j-2] == r {
					d = min(d, rows[depth-1][j-2]+1)
				}
				cur[j] = d
				least = min(least, d)
			}
			depth++
			if least > maxD {
				pruned = true
				break
			}
		}
		if pruned {
			// No key starting with this prefix is within reach.
			i = skipPrefix(keys, i, key[:ends[depth]])
			continue
		}
		// A key more than maxD runes shorter than q is out of reach,
		// and its last cell outside the band computed.
		if d := rows[depth][m]; m-depth <= maxD && d <= maxD && d > 0 && maxEdits(key) > 0 {
			out = append(out, fuzzyKey{key: int32(i), dist: d})
		}
		i++
	}
	return out
}

// skipPrefix returns the index of the first key after i that does not
// start with prefix, given that keys[i] does. Most prefixes are shared by
// a few keys, so it gallops before it bisects.
func skipPrefix(keys *strTable, i int, prefix string) int {
	last, step := i, 1 // keys.at(last) has the prefix
	for last+step < keys.len() && strings.HasPrefix(keys.at(last+step), prefix) {
		last += step
		step *= 2
	}
	// The answer is in (last, last+step].
	n := min(step, keys.len()-last-1)
	return last + 1 + sort.Search(n, func(k int) bool { return !strings.HasPrefix(keys.at(last+1+k), prefix) })
}

// walkBuffers is the memory of a typo walk, kept between walks.
type walkBuffers struct {
	qr, runes []rune
	ends      []int
	cells     []int
	rowList   [][]int
}

// rows returns n rows of width w.
func (b *walkBuffers) rows(n, w int) [][]int {
	cells := grow(&b.cells, n*w)
	rows := grow(&b.rowList, n)
	for k := range rows {
		rows[k] = cells[k*w : (k+1)*w]
	}
	return rows
}

// grow returns (*s)[:n], reallocating *s if it is too short.
func grow[T any](s *[]T, n int) []T {
	if cap(*s) < n {
		*s = make([]T, n)
	}
	return (*s)[:n]
}
