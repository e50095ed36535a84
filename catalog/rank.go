package catalog

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
)

// rank scores the items matching the clauses and returns the best limit
// of them. Typo matches are looked for only when they can change the
// result: they never raise an item's count of words matched without a
// typo, which ranks first, so when limit items already match every word
// without one, nothing matched with a typo could reach the results, and
// the typo walk (the costliest part of a search) is skipped.
func (ix *Index) rank(clauses []clause, kind string, limit int, wk *work) []Hit {
	sc := getScratch(len(ix.items))
	defer sc.release()
	candidates := sc.score(ix, clauses, kind, limit, wk)
	// After scoring, which expands the words' typo terms: a word matched
	// only with a typo is worth what its typo terms are.
	b := ix.bonusesFor(clauses)
	top := topK{limit: limit, best: wk.top[:0]}
	defer func() { wk.top = top.best }()
	for _, id := range candidates {
		e := &sc.items[id]
		top.offer(b.ranked(ix, id, e.matched, e.exact, e.score))
	}
	return ix.hits(clauses, top.best, sc.items)
}

// score adds up, in the scratch, what each item's postings are worth for
// the clauses, and returns the items that can make the results: those
// matching every word without a typo when there are limit of them (they
// outrank anything less, and a broad query touches a thousand items for
// the few dozen that match it all), every item matched otherwise.
func (sc *scratch) score(ix *Index, clauses []clause, kind string, limit int, wk *work) []int32 {
	touched, wordTouched, full := sc.touched[:0], sc.wordTouched[:0], sc.full[:0]
	defer func() { sc.touched, sc.wordTouched, sc.full = touched, wordTouched, full }()

	items := sc.items
	// visit records each item's best match of the current word through
	// term t, leaving out items whose bit in skip is set (matched without
	// a typo already).
	visit := func(t int32, factor float32, skip wordSet, wordTouched []int32) []int32 {
		for _, p := range ix.postings(t) {
			e := &items[p.item]
			if e.exactWords&skip != 0 || kind != "" && ix.items[p.item].kind != kind {
				continue
			}
			s := factor * p.score
			if !e.seen {
				e.seen, e.best = true, s
				wordTouched = append(wordTouched, p.item)
			} else {
				e.best = max(e.best, s)
			}
		}
		return wordTouched
	}
	for ci := range clauses {
		c := &clauses[ci]
		if len(c.exact)+len(c.prefix) == 1 {
			// One term, so one match per item: no best to keep, the
			// common case ("portrait", "photo") in one pass.
			t, factor := int32(0), exactFactor
			if len(c.exact) == 1 {
				t = c.exact[0]
			} else {
				t, factor = c.prefix[0], prefixFactor
			}
			for _, p := range ix.postings(t) {
				if kind != "" && ix.items[p.item].kind != kind {
					continue
				}
				e := &items[p.item]
				if e.matched == 0 {
					touched = append(touched, p.item)
				}
				e.matched++
				e.exact++
				e.exactWords |= 1 << ci
				if int(e.exact) == len(clauses) {
					full = append(full, p.item)
				}
				e.score += factor * p.score
			}
			continue
		}
		wordTouched = wordTouched[:0]
		for _, t := range c.exact {
			wordTouched = visit(t, exactFactor, 0, wordTouched)
		}
		for _, t := range c.prefix {
			wordTouched = visit(t, prefixFactor, 0, wordTouched)
		}
		for _, id := range wordTouched {
			e := &items[id]
			if e.matched == 0 {
				touched = append(touched, id)
			}
			e.matched++
			e.exact++
			e.exactWords |= 1 << ci
			if int(e.exact) == len(clauses) {
				full = append(full, id)
			}
			e.score += e.best
			e.best, e.seen = 0, false
		}
	}
	if len(full) >= limit {
		return full
	}
	for ci := range clauses {
		c := &clauses[ci]
		ix.expandFuzzy(c, wk)
		wordTouched = wordTouched[:0]
		for _, f := range c.fuzzy {
			wordTouched = visit(f.term, fuzzyFactor(f.dist), 1<<ci, wordTouched)
		}
		for _, id := range wordTouched {
			e := &items[id]
			if e.matched == 0 {
				touched = append(touched, id)
			}
			e.matched++
			e.fuzzy |= 1 << ci
			e.score += e.best
			e.best, e.seen = 0, false
		}
	}
	return touched
}

// bonuses are what an item earns beyond its postings' scores: for
// matching every query word, and for having them as a phrase in its
// title.
type bonuses struct {
	words  int
	avgIDF float64
	phrase string // the query's terms between spaces; "" for one word
}

func (ix *Index) bonusesFor(clauses []clause) bonuses {
	b := bonuses{words: len(clauses)}
	for ci := range clauses {
		b.avgIDF += ix.wordIDF(&clauses[ci])
	}
	// The bonuses scale with the query's words so that they matter as
	// much in a catalog of ten items as in one of ten thousand.
	b.avgIDF /= float64(len(clauses))
	if len(clauses) > 1 {
		var sb strings.Builder
		for _, c := range clauses {
			sb.WriteByte(' ')
			sb.WriteString(c.term)
		}
		sb.WriteByte(' ')
		b.phrase = sb.String()
	}
	return b
}

// ranked is item id's place in the ranking, given how many query words
// it matched (exact of them without a typo) and its postings' score.
func (b bonuses) ranked(ix *Index, id int32, matched, exact uint8, score float32) ranked {
	s := float64(score)
	if int(matched) == b.words {
		s += allWordsBonus * b.avgIDF
		if b.phrase != "" && int(exact) == b.words && strings.Contains(ix.items[id].titleTerms, b.phrase) {
			s += phraseBonus * b.avgIDF
		}
	}
	return ranked{id: id, exact: exact, score: s}
}

// hits turns the ranking into results; items is the scratch the ranking
// was scored in, which says which words matched only with a typo.
func (ix *Index) hits(clauses []clause, best []ranked, items []itemScratch) []Hit {
	hits := make([]Hit, 0, len(best))
	for _, r := range best {
		h := ix.hit(int(r.id), displayScore(r, len(clauses)))
		if mask := items[r.id].fuzzy; mask != 0 {
			h.Matched = ix.explain(clauses, r.id, mask)
		}
		hits = append(hits, h)
	}
	return hits
}

// wordIDF is the inverse document frequency of a clause's best term, or
// of the rarest term it reaches: what matching it is worth.
func (ix *Index) wordIDF(c *clause) float64 {
	best := 0.0
	for _, t := range c.exact {
		best = max(best, float64(ix.idf[t]))
	}
	for _, t := range c.prefix {
		best = max(best, float64(ix.idf[t]))
	}
	if best == 0 {
		for _, f := range c.fuzzy {
			best = max(best, float64(ix.idf[f.term]))
		}
	}
	if best == 0 {
		best = math.Log(2)
	}
	return best
}

// displayScore maps a rank to a score between 0 and 1 that orders hits as
// they are ranked: the share of query words matched without a typo,
// refined by the relevance within that share.
func displayScore(r ranked, words int) float64 {
	s := (float64(r.exact) + r.score/(r.score+10)) / float64(words+1)
	// Rounded for reading, but never to 0, which means "not searched".
	return max(math.Round(s*1e4)/1e4, 1e-4)
}

// explain names, for each query word an item matched only with a typo
// allowed, the word that stood in for it: the one that scored best, as
// in the ranking.
func (ix *Index) explain(clauses []clause, id int32, mask wordSet) string {
	var parts []string
	for ci := range clauses {
		if mask&(1<<ci) == 0 {
			continue
		}
		best, bestScore := -1, float32(0)
		for fi, f := range clauses[ci].fuzzy {
			post := ix.postings(f.term)
			i, ok := slices.BinarySearchFunc(post, id, func(p posting, id int32) int { return int(p.item - id) })
			if !ok {
				continue
			}
			if s := fuzzyFactor(f.dist) * post[i].score; best < 0 || s > bestScore {
				best, bestScore = fi, s
			}
		}
		if best >= 0 {
			parts = append(parts, fmt.Sprintf("%q for %q", ix.shownWord(clauses[ci].fuzzy[best]), clauses[ci].word))
		}
	}
	return strings.Join(parts, ", ")
}

func fuzzyFactor(dist int) float32 {
	if dist > 1 {
		return fuzzyFactor2
	}
	return fuzzyFactor1
}

// shownWord is the word to show for a fuzzy match: the feed's own
// spelling of it when the key was a word of the feed, else a word of the
// feed with the same stem.
func (ix *Index) shownWord(f fuzzyTerm) string {
	raw := ix.termRaw.at(int(f.term))
	if key := ix.keys.at(int(f.key)); key != foldWord(lowerWord(raw)) && key != ix.terms.at(int(f.term)) {
		return key
	}
	return raw
}

// scratch is the per-item working memory of one search. A catalog of
// 10,000 items needs 160 KB of it, which at thousands of searches a
// second would be the gateway's largest garbage; it is pooled, and only
// the entries a search touched are cleared afterwards. One 16-byte
// struct per item keeps what a posting updates in one cache line; a
// posting's update is a random access into the array, so the smaller it
// is the more of it stays in a core's cache between searches.
type scratch struct {
	items       []itemScratch
	touched     []int32 // items matched by any word
	wordTouched []int32 // items matched by the current word
	full        []int32 // items matched by every word without a typo
}

type itemScratch struct {
	score      float32 // sum over the query words matched so far
	best       float32 // the current word's best match; zero between words
	seen       bool    // the current word matched; false between words
	matched    uint8   // query words matched
	exact      uint8   // query words matched without a typo
	exactWords wordSet // query words matched without a typo
	fuzzy      wordSet // query words matched only with a typo
}

// wordSet has bit i set for query word i; MaxQueryWords fit.
type wordSet uint16

// A query of more words than a wordSet holds does not compile.
var _ [16 - MaxQueryWords]struct{}

var scratchPool sync.Pool

func getScratch(n int) *scratch {
	sc, _ := scratchPool.Get().(*scratch)
	if sc == nil || len(sc.items) < n {
		// A first search, or a catalog that grew: a fresh, zeroed one.
		return &scratch{items: make([]itemScratch, n)}
	}
	return sc
}

func (sc *scratch) release() {
	for _, id := range sc.touched {
		sc.items[id] = itemScratch{}
	}
	scratchPool.Put(sc)
}

// topK keeps the best limit results in rank order. A broad query ("photo")
// matches every course; keeping only the top few avoids sorting 10,000
// results to return ten.
type topK struct {
	limit int
	best  []ranked
}

type ranked struct {
	id    int32
	exact uint8 // query words matched without a typo
	score float64
}

// before reports whether a ranks above b: more query words matched
// without a typo (so an exact or stemmed match always ranks above a
// fuzzy one), then higher score, then feed order.
func (a ranked) before(b ranked) bool {
	if a.exact != b.exact {
		return a.exact > b.exact
	}
	return a.score > b.score || a.score == b.score && a.id < b.id
}

func (t *topK) offer(r ranked) {
	n := len(t.best)
	if n == t.limit && !r.before(t.best[n-1]) {
		return
	}
	if n < t.limit {
		t.best = append(t.best, r)
	} else {
		n-- // r displaces the last
	}
	// An insertion from the end: the list is at most MaxLimit long and
	// most offers that get this far belong near its end.
	for n > 0 && r.before(t.best[n-1]) {
		t.best[n] = t.best[n-1]
		n--
	}
	t.best[n] = r
}
