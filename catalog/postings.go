package catalog

import (
	"encoding/json"
	"slices"
	"strings"
)

// Fields an item's words come from, weakest first; a word found in several
// fields of an item counts once, with its strongest field.
const (
	fieldText  uint8 = 1 + iota // summary, slug, interval, extra text
	fieldTag                    // tags and lecturers
	fieldTitle                  // title or name
)

type posting struct {
	item  int32
	field uint8
}

// indexBuilder collects the words of one item at a time and appends them
// to the postings.
type indexBuilder struct {
	terms map[string][]posting
	cur   map[string]uint8
}

func newIndexBuilder() *indexBuilder {
	return &indexBuilder{terms: make(map[string][]posting), cur: make(map[string]uint8)}
}

func (b *indexBuilder) add(field uint8, texts ...string) {
	for _, text := range texts {
		for _, tok := range tokens(text) {
			if b.cur[tok] < field {
				b.cur[tok] = field
			}
		}
	}
}

// finish adds the item's own fields and its textual extra fields, then
// records its postings. Extra strings that look like URLs are skipped:
// their words ("https", "www") would match everything.
func (b *indexBuilder) finish(ix *Index, id int, extra map[string]json.RawMessage) {
	it := &ix.items[id]
	b.add(fieldTitle, it.title)
	b.add(fieldText, it.slug, it.summary)
	for _, raw := range extra {
		if len(raw) == 0 || raw[0] != '"' {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && !strings.Contains(s, "://") {
			b.add(fieldText, s)
		}
	}
	for tok, f := range b.cur {
		b.terms[tok] = append(b.terms[tok], posting{item: int32(id), field: f})
	}
	clear(b.cur)
}

// postings returns the sorted vocabulary and the postings aligned with it.
func (b *indexBuilder) postings() ([]string, [][]posting) {
	vocab := make([]string, 0, len(b.terms))
	for tok := range b.terms {
		vocab = append(vocab, tok)
	}
	slices.Sort(vocab)
	post := make([][]posting, len(vocab))
	for i, tok := range vocab {
		post[i] = b.terms[tok]
	}
	return vocab, post
}
