package catalog

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
)

// The fields an item's words come from, strongest first. BM25F weighs a
// word by the field it is in: people who type words of a course's name
// mean that course, tags and lecturers are chosen words, a summary is
// prose, and the rest (slug, interval, a feed's own extra text) is
// background.
const (
	fieldTitle   = iota // title or name
	fieldTag            // tags and lecturers
	fieldSummary        // summary (or the description standing in for it)
	fieldText           // slug, interval, extra text fields
	numFields
)

// BM25F parameters, chosen before the relevance suite (relevance_test.go)
// ran and kept because it passes with them: k1 is the usual 1.2, and b is
// lower for the short title and tag fields, whose lengths say little.
var (
	fieldWeight = [numFields]float64{fieldTitle: 5, fieldTag: 3, fieldSummary: 1.5, fieldText: 1}
	fieldB      = [numFields]float64{fieldTitle: 0.5, fieldTag: 0.3, fieldSummary: 0.75, fieldText: 0.75}
)

const bm25K1 = 1.2

// posting is one term in one item, with the term's BM25F score there,
// computed once when the index is built so that a search only adds.
type posting struct {
	item  int32
	score float32
}

// indexBuilder analyses the words of one item at a time and appends
// them to the postings; terms are numbered in order of first appearance
// and sorted at the end.
type indexBuilder struct {
	st     stemmer
	words  map[string]wordInfo // analysis of each distinct raw word seen
	termID map[string]int32
	terms  []string
	post   [][]posting
	raw    []string // per term: the word as written, to show in explanations
	// rawTitle[t] is whether raw[t] comes from a title.
	rawTitle []bool
	keys     map[string]int32
	// The current item: its terms in first-seen order, each with its
	// frequencies at the same index of tfs, and its field lengths.
	cur   map[int32]int
	order []int32
	tfs   [][numFields]uint8
	lens  [numFields]int // of the current item

	// tf[t][i] is how often term t occurs in each field of the item of
	// post[t][i], saturated at 255 (BM25 saturates long before).
	tf [][][numFields]uint8
}

// wordInfo is what a raw word contributes: nothing for a stop word, else
// its term.
type wordInfo struct {
	stop bool
	term int32
}

func newIndexBuilder(a *analyzer) *indexBuilder {
	return &indexBuilder{
		st:     a.stemmer(),
		words:  make(map[string]wordInfo),
		termID: make(map[string]int32),
		keys:   make(map[string]int32),
		cur:    make(map[int32]int),
	}
}

// add indexes texts as words of field.
func (b *indexBuilder) add(field int, texts ...string) {
	for _, text := range texts {
		splitWords(compatText(text), func(w string) {
			info, ok := b.words[w]
			if !ok {
				info = b.analyse(w)
				b.words[w] = info
			}
			if info.stop {
				return
			}
			if field == fieldTitle && !b.rawTitle[info.term] {
				// Show a word as a title writes it ("Lightroom"), not
				// as a tag or slug might ("lightroom").
				b.raw[info.term], b.rawTitle[info.term] = w, true
			}
			b.lens[field]++
			i, ok := b.cur[info.term]
			if !ok {
				i = len(b.order)
				b.cur[info.term] = i
				b.order = append(b.order, info.term)
				b.tfs = append(b.tfs, [numFields]uint8{})
			}
			if b.tfs[i][field] < math.MaxUint8 {
				b.tfs[i][field]++
			}
		})
	}
}

// analyse finds a new word's term, and registers the keys that lead to it:
// its folded spelling, its term, and the stem of its accent-free spelling,
// so that a query that drops accents still finds an inflected word.
func (b *indexBuilder) analyse(w string) wordInfo {
	lower := lowerWord(w)
	folded := foldWord(lower)
	if b.st.a.stop[folded] {
		return wordInfo{stop: true}
	}
	term := b.st.term(lower)
	id, ok := b.termID[term]
	if !ok {
		id = int32(len(b.terms))
		b.termID[term] = id
		b.terms = append(b.terms, term)
		b.post = append(b.post, nil)
		b.tf = append(b.tf, nil)
		b.raw = append(b.raw, w)
		b.rawTitle = append(b.rawTitle, false)
	}
	b.key(folded, id)
	b.key(term, id)
	if folded != lower {
		b.key(b.st.term(folded), id)
	}
	return wordInfo{term: id}
}

func (b *indexBuilder) key(k string, id int32) {
	if _, ok := b.keys[k]; !ok {
		b.keys[k] = id
	}
}

// finish adds the item's own fields and its textual extra fields, records
// its postings and the length of each of its fields in words. Extra
// strings that look like URLs are skipped: their words ("https", "www")
// would match everything.
func (b *indexBuilder) finish(ix *Index, id int, extra map[string]json.RawMessage, summaryKey string) {
	it := &ix.items[id]
	b.add(fieldTitle, it.title)
	it.titleTerms = b.phrase(it.title)
	b.add(fieldSummary, it.summary)
	b.add(fieldText, it.slug)
	for _, k := range sortedKeys(extra) {
		raw := extra[k]
		if k == summaryKey || len(raw) == 0 || raw[0] != '"' {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && !strings.Contains(s, "://") {
			b.add(fieldText, s)
		}
	}
	for i, t := range b.order {
		b.post[t] = append(b.post[t], posting{item: int32(id)})
		b.tf[t] = append(b.tf[t], b.tfs[i])
	}
	for f, n := range b.lens {
		it.lens[f] = uint16(min(n, math.MaxUint16))
	}
	clear(b.cur)
	b.order, b.tfs = b.order[:0], b.tfs[:0]
	b.lens = [numFields]int{}
}

// phrase is text's terms, space-separated and space-enclosed, so that
// a query's terms can be looked for in it as a phrase, whole words only.
func (b *indexBuilder) phrase(text string) string {
	var sb strings.Builder
	splitWords(compatText(text), func(w string) {
		if info := b.words[w]; !info.stop {
			sb.WriteByte(' ')
			sb.WriteString(b.terms[info.term])
		}
	})
	if sb.Len() == 0 {
		return ""
	}
	sb.WriteByte(' ')
	return sb.String()
}

// postings returns the postings of term t.
func (ix *Index) postings(t int32) []posting { return ix.post[ix.postOff[t]:ix.postOff[t+1]] }

// finalize sorts the vocabulary and computes what scoring needs: each
// term's inverse document frequency and each item's per-field length
// normalisation.
func (b *indexBuilder) finalize(ix *Index) {
	n := len(b.terms)
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(x, y int32) int { return strings.Compare(b.terms[x], b.terms[y]) })
	newID := make([]int32, n)
	terms := make([]string, n)
	raws := make([]string, n)
	ix.idf = make([]float32, n)
	ix.postOff = make([]uint32, n+1)
	total := 0
	for _, p := range b.post {
		total += len(p)
	}
	ix.post = make([]posting, 0, total)
	docs := float64(len(ix.items))
	for i, old := range perm {
		newID[old] = int32(i)
		terms[i] = b.terms[old]
		raws[i] = b.raw[old]
		ix.post = append(ix.post, b.post[old]...)
		ix.postOff[i+1] = uint32(len(ix.post))
		df := float64(len(b.post[old]))
		ix.idf[i] = float32(math.Log(1 + (docs-df+0.5)/(df+0.5)))
	}
	ix.terms = newStrTable(terms)
	ix.termRaw = newStrTable(raws)

	keys := make([]string, 0, len(b.keys))
	for k := range b.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ix.keys = newStrTable(keys)
	ix.keyTerm = make([]int32, len(keys))
	for i, k := range keys {
		// A key that is itself a term leads to that term, whatever word
		// registered it first.
		if t, ok := b.termID[k]; ok {
			ix.keyTerm[i] = newID[t]
		} else {
			ix.keyTerm[i] = newID[b.keys[k]]
		}
	}

	var avg [numFields]float64
	for i := range ix.items {
		for f, l := range ix.items[i].lens {
			avg[f] += float64(l)
		}
	}
	for f := range avg {
		avg[f] /= max(docs, 1)
	}
	norms := make([][numFields]float64, len(ix.items))
	for i := range ix.items {
		for f := range numFields {
			norm := 1.0
			if avg[f] > 0 {
				norm = 1 - fieldB[f] + fieldB[f]*float64(ix.items[i].lens[f])/avg[f]
			}
			norms[i][f] = fieldWeight[f] / norm
		}
	}
	for t := range n {
		tfs := b.tf[perm[t]]
		post := ix.postings(int32(t))
		for i := range post {
			var tf float64
			for f, n := range norms[post[i].item] {
				tf += float64(tfs[i][f]) * n
			}
			post[i].score = ix.idf[t] * float32(tf*(bm25K1+1)/(tf+bm25K1))
		}
	}
}
