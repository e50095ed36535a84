package catalog

import (
	"slices"
	"sort"
	"strings"
	"sync"
)

// Search limits: enough for an agent to choose from, small enough to keep
// a tool result readable.
const (
	DefaultLimit = 10
	MaxLimit     = 50
)

// maxQueryTokens bounds the work one query can cause.
const maxQueryTokens = 16

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
}

// Weights per field for a query word equal to an item word, and for one
// that is only a prefix of it ("photo" in "photography"). A word counts
// once per item, with its best field, and any title match scores above any
// match elsewhere: people who type words of a course's name mean that
// course.
var (
	exactWeight  = [...]float64{fieldText: 3, fieldTag: 5, fieldTitle: 10}
	prefixWeight = [...]float64{fieldText: 1.5, fieldTag: 2.5, fieldTitle: 6}
)

// Bonuses that order items matching the whole query above those matching
// part of it, and the exact title phrase above scattered words.
const (
	allWordsBonus = 5
	phraseBonus   = 4
)

// Search finds items whose words match the query's words, case- and
// accent-insensitively, a query word also matching as a prefix (from two
// letters on). kind "" searches every kind; an unknown kind finds nothing.
// Results are ranked by score, ties in feed order. An empty query lists
// items in feed order. limit <= 0 means DefaultLimit; it is capped at
// MaxLimit.
func (ix *Index) Search(query, kind string, limit int) []Hit {
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	if kind != "" && !ValidKind(kind) {
		return nil
	}
	words := queryWords(query)
	if len(words) == 0 {
		return ix.browse(kind, limit)
	}

	sc := getScratch(len(ix.items))
	defer sc.release()
	score, matched, best := sc.score, sc.matched, sc.best
	touched, wordTouched := sc.touched[:0], sc.wordTouched[:0]
	defer func() { sc.touched, sc.wordTouched = touched, wordTouched }()
	for _, w := range words {
		wordTouched = wordTouched[:0]
		for j := sort.SearchStrings(ix.vocab, w); j < len(ix.vocab) && strings.HasPrefix(ix.vocab[j], w); j++ {
			exact := len(ix.vocab[j]) == len(w)
			if !exact && len(w) < 2 {
				break
			}
			for _, p := range ix.post[j] {
				if kind != "" && ix.items[p.item].kind != kind {
					continue
				}
				weight := prefixWeight[p.field]
				if exact {
					weight = exactWeight[p.field]
				}
				if best[p.item] == 0 {
					wordTouched = append(wordTouched, p.item)
				}
				best[p.item] = max(best[p.item], weight)
			}
		}
		for _, id := range wordTouched {
			if matched[id] == 0 {
				touched = append(touched, id)
			}
			matched[id]++
			score[id] += best[id]
			best[id] = 0
		}
	}

	phrase := ""
	if len(words) > 1 {
		phrase = strings.Join(words, " ")
	}
	top := topK{limit: limit}
	for _, id := range touched {
		s := score[id]
		if int(matched[id]) == len(words) {
			s += allWordsBonus
			if phrase != "" && strings.Contains(ix.items[id].titleNorm, phrase) {
				s += phraseBonus
			}
		}
		top.offer(id, s)
	}
	hits := make([]Hit, 0, len(top.best))
	for _, r := range top.best {
		hits = append(hits, ix.hit(int(r.id), r.score))
	}
	return hits
}

// scratch is the per-item working memory of one search. A catalog of
// 10,000 items needs 170 KB of it, which at thousands of searches a
// second would be the gateway's largest garbage; it is pooled, and only
// the entries a search touched are cleared afterwards.
type scratch struct {
	score                []float64
	matched              []uint8
	best                 []float64 // zero between words and between searches
	touched, wordTouched []int32
}

var scratchPool sync.Pool

func getScratch(n int) *scratch {
	sc, _ := scratchPool.Get().(*scratch)
	if sc == nil || len(sc.score) < n {
		// A first search, or a catalog that grew: a fresh, zeroed one.
		return &scratch{score: make([]float64, n), matched: make([]uint8, n), best: make([]float64, n)}
	}
	return sc
}

func (sc *scratch) release() {
	for _, id := range sc.touched {
		sc.score[id], sc.matched[id] = 0, 0
	}
	scratchPool.Put(sc)
}

// queryWords tokenizes a query, dropping repeated words.
func queryWords(q string) []string {
	var words []string
	for _, w := range tokens(q) {
		if !slices.Contains(words, w) {
			words = append(words, w)
		}
		if len(words) == maxQueryTokens {
			break
		}
	}
	return words
}

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

// topK keeps the best limit results in rank order. A broad query ("photo")
// matches every course; keeping only the top few avoids sorting 10,000
// results to return ten.
type topK struct {
	limit int
	best  []ranked
}

type ranked struct {
	id    int32
	score float64
}

// before reports whether a ranks above b: higher score, then feed order.
func (a ranked) before(b ranked) bool {
	return a.score > b.score || a.score == b.score && a.id < b.id
}

func (t *topK) offer(id int32, score float64) {
	r := ranked{id, score}
	if len(t.best) == t.limit && !r.before(t.best[len(t.best)-1]) {
		return
	}
	i := sort.Search(len(t.best), func(i int) bool { return r.before(t.best[i]) })
	if len(t.best) < t.limit {
		t.best = append(t.best, ranked{})
	}
	copy(t.best[i+1:], t.best[i:])
	t.best[i] = r
}
