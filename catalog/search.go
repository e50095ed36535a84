package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/blevesearch/snowballstem"
)

// Search limits: enough for an agent to choose from, small enough to keep
// a tool result readable.
const (
	DefaultLimit = 10
	MaxLimit     = 50
)

// Query bounds. A search costs work per query word, so a query is kept to
// what a person types: a few words, never a pasted page.
const (
	MaxQueryLength = 500 // characters
	MaxQueryWords  = 16
)

// Hit is one search result.
type Hit struct {
	Kind     string  `json:"kind"`
	Slug     string  `json:"slug"`
	Title    string  `json:"title"`
	Summary  string  `json:"summary,omitempty"`
	Price    *Price  `json:"price,omitempty"`
	StartsAt string  `json:"starts_at,omitempty"`
	Interval string  `json:"interval,omitempty"`
	URL      string  `json:"url"`
	Score    float64 `json:"score"`
	// Matched says which words of the item stood in for query words it
	// matched only with a typo allowed, e.g. `"sextant" for "sextent"`,
	// so that whoever asked can be told what was searched instead.
	Matched string `json:"matched,omitempty"`
}

// How much a match of a query word counts, by how it matched: the word
// or its stem, a longer word it starts ("photo" in "photography"), or a
// word within a typo or two. A fuzzy match never outranks an exact one
// (see rank), these only order matches of the same kind.
const (
	exactFactor  float32 = 1.0
	prefixFactor float32 = 0.5
	fuzzyFactor1 float32 = 0.6 // one edit
	fuzzyFactor2 float32 = 0.4 // two edits
)

// Bonuses, in units of a typical word's score, that order items matching
// the whole query above those matching part of it, and the query as a
// phrase in the title above scattered words.
const (
	allWordsBonus = 1.0
	phraseBonus   = 1.5
)

// maxPrefixTerms bounds the terms a short query word expands to as a
// prefix ("ph" starts hundreds of words in a large catalog).
const maxPrefixTerms = 256

// clause is one query word and the terms it matches, by kind of match.
type clause struct {
	word   string  // as typed, for explanations
	folded string  // case- and accent-folded
	term   string  // its own term (stem), for the phrase bonus
	exact  []int32 // term ids
	prefix []int32
	fuzzy  []fuzzyTerm // closest first
}

type fuzzyTerm struct {
	term int32
	key  int32 // the key that matched, for the explanation
	dist int
}

// Search finds items whose words match the query's words: the same word
// or another form of it (stemmed in the feed's language, case and
// accents ignored), a longer word it starts (from two letters on), or,
// for words of four letters or more, a word within one typo (two from
// eight letters on). Stop words of the language ("the", "about") are
// ignored. Items are ranked first by how many query words they match
// without a typo, then by BM25F relevance (title above tags above summary
// above the rest) with bonuses for matching every word and for the query
// as a phrase in the title; ties in feed order. kind "" searches every
// kind; an unknown kind finds nothing. A blank query lists items in feed
// order; a query with nothing to search for (only stop words or
// punctuation) finds nothing: CheckQuery says why. Only the first
// MaxQueryWords words count. limit <= 0 means DefaultLimit; it is capped
// at MaxLimit.
func (ix *Index) Search(query, kind string, limit int) []Hit {
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	if kind != "" && !ValidKind(kind) {
		return nil
	}
	if strings.TrimSpace(query) == "" {
		return ix.browse(kind, limit)
	}
	w := getWork()
	defer w.release()
	st := stemmer{a: ix.an, env: w.env}
	words, _ := ix.queryWords(st.a, query, w.words[:0])
	w.words = words
	if len(words) == 0 {
		return nil
	}
	words = words[:min(len(words), MaxQueryWords)]
	for len(w.clauses) < len(words) {
		w.clauses = append(w.clauses, clause{})
	}
	clauses := w.clauses[:len(words)]
	for i, qw := range words {
		ix.expand(st, qw, &clauses[i], w)
	}
	return ix.rank(clauses, kind, limit, w)
}

// work is the memory a search needs besides the per-item scratch: query
// words, their expansions, the typo walk's rows. It is pooled too, so that
// a search allocates little more than its results.
type work struct {
	env     *snowballstem.Env
	words   []queryWord
	clauses []clause
	found   []fuzzyKey
	walk    walkBuffers
	top     []ranked
}

var workPool sync.Pool

func getWork() *work {
	if w, ok := workPool.Get().(*work); ok {
		return w
	}
	return &work{env: snowballstem.NewEnv("")}
}

func (w *work) release() {
	clear(w.words) // they point into the query
	for i := range w.clauses {
		c := &w.clauses[i]
		*c = clause{exact: c.exact[:0], prefix: c.prefix[:0], fuzzy: c.fuzzy[:0]}
	}
	workPool.Put(w)
}

// queryWord is a query word before expansion.
type queryWord struct{ raw, lower, folded string }

// queryWords splits a query into its words that are not stop words,
// dropping repeats; it keeps one more than MaxQueryWords, so that
// CheckQuery can tell a query that has too many, and also returns how
// many words there were in all, stop words included.
func (ix *Index) queryWords(a *analyzer, q string, words []queryWord) ([]queryWord, int) {
	if len(q) > MaxQueryLength*utf8.UTFMax {
		// CheckQuery refuses such a query before it gets here through
		// the tools; a direct caller gets its beginning searched.
		q = strings.ToValidUTF8(q[:MaxQueryLength*utf8.UTFMax], "")
	}
	all := 0
	splitWords(compatText(q), func(w string) {
		all++
		if len(words) > MaxQueryWords {
			return
		}
		lower := lowerWord(w)
		folded := foldWord(lower)
		if a.stop[folded] || slices.ContainsFunc(words, func(x queryWord) bool { return x.folded == folded }) {
			return
		}
		words = append(words, queryWord{raw: w, lower: lower, folded: folded})
	})
	return words, all
}

// CheckQuery says what keeps a query from being searched usefully, or
// returns nil: it is too long, not text, has nothing to search for, or
// more words than count. Search itself never fails; the MCP tool asks
// this first so that an agent learns what to change instead of getting
// nothing. A blank query is fine: it lists the catalog.
func (ix *Index) CheckQuery(q string) error {
	if !utf8.ValidString(q) {
		return errors.New("the query is not valid UTF-8 text")
	}
	if n := utf8.RuneCountInString(q); n > MaxQueryLength {
		return fmt.Errorf("the query is %d characters long, more than the %d allowed: search with a few words", n, MaxQueryLength)
	}
	if strings.TrimSpace(q) == "" {
		return nil
	}
	w := getWork()
	defer w.release()
	words, all := ix.queryWords(ix.an, q, w.words[:0])
	w.words = words
	switch {
	case all == 0:
		return errors.New("the query has no letters or digits to search for")
	case len(words) == 0:
		return fmt.Errorf("the query has only words too common to search for (%s): add what the course is about, a title word or a lecturer's name", clip(strings.TrimSpace(q)))
	case len(words) > MaxQueryWords:
		return fmt.Errorf("the query has more than %d different words: search with fewer", MaxQueryWords)
	}
	return nil
}

// expand finds the terms a query word matches, into c (whose slices are
// empty and reused).
func (ix *Index) expand(st stemmer, w queryWord, c *clause, wk *work) {
	c.word, c.folded = w.raw, w.folded
	if len(w.lower) > maxWordBytes {
		c.term = w.folded
		ix.addExact(c, w.folded)
		return
	}
	c.term = st.term(w.lower)
	ix.addExact(c, c.term)
	ix.addExact(c, w.folded)
	if w.folded != w.lower {
		ix.addExact(c, st.term(w.folded))
	}
	if len(w.folded) >= 2 {
		ix.addPrefix(c, w.folded)
		if len(c.term) >= 4 && !strings.HasPrefix(c.term, w.folded) {
			// German compounds: "Porträts" stems to "portrat", which
			// starts "Porträtfotografie".
			ix.addPrefix(c, c.term)
		}
	}
}

// expandFuzzy finds the terms within a typo or two of a clause's word
// that it does not already match otherwise.
func (ix *Index) expandFuzzy(c *clause, wk *work) {
	d := maxEdits(c.folded)
	if d == 0 || len(c.fuzzy) > 0 {
		return
	}
	found := ix.fuzzyKeys(c.folded, d, &wk.walk, wk.found[:0])
	wk.found = found
	slices.SortStableFunc(found, func(a, b fuzzyKey) int { return a.dist - b.dist })
	for _, f := range found {
		t := ix.keyTerm[f.key]
		if c.has(t) {
			continue
		}
		if len(c.fuzzy) == maxFuzzyTerms {
			break
		}
		c.fuzzy = append(c.fuzzy, fuzzyTerm{term: t, key: f.key, dist: f.dist})
	}
}

func (c *clause) has(t int32) bool {
	return slices.Contains(c.exact, t) || slices.Contains(c.prefix, t) ||
		slices.ContainsFunc(c.fuzzy, func(f fuzzyTerm) bool { return f.term == t })
}

func (ix *Index) addExact(c *clause, key string) {
	if i, ok := ix.keys.find(key); ok {
		if t := ix.keyTerm[i]; !slices.Contains(c.exact, t) {
			c.exact = append(c.exact, t)
		}
	}
}

func (ix *Index) addPrefix(c *clause, prefix string) {
	for i := ix.keys.search(prefix); i < ix.keys.len() && strings.HasPrefix(ix.keys.at(i), prefix); i++ {
		if len(c.prefix) == maxPrefixTerms {
			return
		}
		if t := ix.keyTerm[i]; !slices.Contains(c.exact, t) && !slices.Contains(c.prefix, t) {
			c.prefix = append(c.prefix, t)
		}
	}
}

// browse answers a blank query: the first limit items of the kind, in
// feed order, unscored.
func (ix *Index) browse(kind string, limit int) []Hit {
	var hits []Hit
	for id := range ix.items {
		if len(hits) == limit {
			break
		}
		if kind == "" || ix.items[id].kind == kind {
			hits = append(hits, ix.hit(id, 0))
		}
	}
	return hits
}

func (ix *Index) hit(id int, score float64) Hit {
	it := &ix.items[id]
	return Hit{
		Kind: it.kind, Slug: it.slug, Title: it.title, Summary: it.summary,
		Price: it.price, StartsAt: it.startsAt, Interval: it.interval,
		URL: it.url, Score: score,
	}
}
