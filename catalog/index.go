package catalog

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Kinds of catalog items, as Search, Hit and URL name them.
const (
	KindCourse  = "course"
	KindEvent   = "event"
	KindPlan    = "plan"
	KindProduct = "product"
)

// ValidKind reports whether k is one of the item kinds.
func ValidKind(k string) bool {
	switch k {
	case KindCourse, KindEvent, KindPlan, KindProduct:
		return true
	}
	return false
}

// Index is a feed prepared for reading: search postings, slug lookup and
// events sorted by date, all computed once so that the MCP tools answer
// without scanning the feed. An Index is never modified after NewIndex
// returns, so any number of goroutines may read it; the Feed and the items
// it hands out share memory with it and must be treated as read-only.
type Index struct {
	origin string
	feed   *Feed
	sum    [sha256.Size]byte // of the raw feed bytes; set by Manager

	items []item // every item, in feed order: courses, events, plans, products
	slugs map[itemKey]int

	an *analyzer // the feed language's stemmer and stop words

	// terms is every distinct term (stemmed, folded word), sorted; the
	// postings of term t are post[postOff[t]:postOff[t+1]], in item
	// order; idf[t] is its inverse document frequency and termRaw.at(t) a
	// word of the feed that gave it, as written.
	terms   strTable
	post    []posting
	postOff []uint32
	idf     []float32
	termRaw strTable

	// keys is every spelling that leads to a term (folded words, terms,
	// accent-free stems), sorted so that all keys with a given prefix are
	// adjacent and the fuzzy matcher can walk them as a trie; keyTerm[i]
	// is the term keys.at(i) leads to.
	keys    strTable
	keyTerm []int32

	events []datedEvent // sorted by start, then feed order
}

type item struct {
	kind     string
	pos      int // index in the feed list of its kind
	slug     string
	title    string
	summary  string
	price    *Price
	startsAt string
	interval string
	url      string

	// titleTerms is the title's terms, space-separated with a space at
	// each end, for the phrase bonus.
	titleTerms string
	lens       [numFields]uint16 // words per field
}

type itemKey struct{ kind, slug string }

type datedEvent struct {
	start, end time.Time
	pos        int
}

// NewIndex prepares f for reading. origin is the public site origin used
// for item URLs. NewIndex expects a feed that passed Validate but does not
// fail on one that did not: the first of duplicate slugs wins and events
// with unreadable dates are left out of Events.
func NewIndex(origin string, f *Feed) *Index {
	if f == nil {
		f = &Feed{}
	}
	ix := &Index{
		origin: strings.TrimRight(origin, "/"),
		feed:   f,
		slugs:  make(map[itemKey]int),
		an:     analyzerFor(f.Language),
	}
	ix.items = make([]item, 0, len(f.Courses)+len(f.Events)+len(f.MembershipPlans)+len(f.DigitalProducts))
	b := newIndexBuilder(ix.an)
	for i, c := range f.Courses {
		id, sk := ix.add(item{kind: KindCourse, pos: i, slug: c.Slug, title: c.Title, summary: c.Summary, price: c.Price}, c.Extra)
		b.add(fieldTag, c.Lecturers...)
		b.add(fieldTag, c.Tags...)
		b.finish(ix, id, c.Extra, sk)
	}
	for i, e := range f.Events {
		id, sk := ix.add(item{kind: KindEvent, pos: i, slug: e.Slug, title: e.Title, price: e.Price, startsAt: e.StartsAt}, e.Extra)
		b.finish(ix, id, e.Extra, sk)
		if de, ok := eventDates(e, i); ok {
			ix.events = append(ix.events, de)
		}
	}
	for i, m := range f.MembershipPlans {
		id, sk := ix.add(item{kind: KindPlan, pos: i, slug: m.Slug, title: m.Name, price: m.Price, interval: m.Interval}, m.Extra)
		b.add(fieldText, m.Interval)
		b.finish(ix, id, m.Extra, sk)
	}
	for i, d := range f.DigitalProducts {
		id, sk := ix.add(item{kind: KindProduct, pos: i, slug: d.Slug, title: d.Title, price: d.Price}, d.Extra)
		b.finish(ix, id, d.Extra, sk)
	}
	b.finalize(ix)
	slices.SortStableFunc(ix.events, func(a, b datedEvent) int { return a.start.Compare(b.start) })
	return ix
}

// add appends an item and returns its id and the extra key its summary
// came from, if any (so that the text is not indexed twice).
func (ix *Index) add(it item, extra map[string]json.RawMessage) (int, string) {
	summaryKey := ""
	if it.summary == "" {
		it.summary, summaryKey = extraString(extra, "summary", "description")
	}
	it.url = ix.itemURL(it.kind, it.slug, extra)
	id := len(ix.items)
	ix.items = append(ix.items, it)
	key := itemKey{it.kind, it.slug}
	if _, dup := ix.slugs[key]; !dup {
		ix.slugs[key] = id
	}
	return id, summaryKey
}

func eventDates(e Event, pos int) (datedEvent, bool) {
	start, err := time.Parse(time.RFC3339, e.StartsAt)
	if err != nil {
		return datedEvent{}, false
	}
	end := start
	if e.EndsAt != "" {
		if t, err := time.Parse(time.RFC3339, e.EndsAt); err == nil && !t.Before(start) {
			end = t
		}
	}
	return datedEvent{start: start, end: end, pos: pos}, true
}

// extraString returns the string held by the first of keys that holds
// one in extra, and that key.
func extraString(extra map[string]json.RawMessage, keys ...string) (string, string) {
	for _, k := range keys {
		var s string
		if raw, ok := extra[k]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
			return s, k
		}
	}
	return "", ""
}

// Feed returns the feed the index was built from. It is shared: read only.
func (ix *Index) Feed() *Feed { return ix.feed }

// Course returns the course with the given slug.
func (ix *Index) Course(slug string) (Course, bool) {
	id, ok := ix.slugs[itemKey{KindCourse, slug}]
	if !ok {
		return Course{}, false
	}
	return ix.feed.Courses[ix.items[id].pos], true
}

// Events returns the events that overlap [from, to], sorted by start. An
// event overlaps when it starts no later than to and ends (or, without an
// end, starts) no earlier than from, so an event in progress at from is
// included. A zero from or to leaves that side of the range open.
func (ix *Index) Events(from, to time.Time) []Event {
	var out []Event
	for _, de := range ix.events {
		if !to.IsZero() && de.start.After(to) {
			break
		}
		if !from.IsZero() && de.end.Before(from) {
			continue
		}
		out = append(out, ix.feed.Events[de.pos])
	}
	return out
}

// Plans returns the membership plans in feed order.
func (ix *Index) Plans() []MembershipPlan { return slices.Clone(ix.feed.MembershipPlans) }

// Products returns the digital products in feed order.
func (ix *Index) Products() []DigitalProduct { return slices.Clone(ix.feed.DigitalProducts) }
