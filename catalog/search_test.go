package catalog

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

const searchFeed = `{
	"school": {"name": "S"},
	"courses": [
		{"slug": "basics", "title": "Camera Basics", "summary": "Exposure and portrait framing for beginners.", "tags": ["beginner"], "lecturers": ["Lena Hoffmann"]},
		{"slug": "portrait", "title": "Portrait Photography", "summary": "Posing people.", "tags": ["people", "lighting"], "lecturers": ["Priya Nair"]},
		{"slug": "tagged", "title": "People Pictures", "summary": "Candid shots.", "tags": ["portrait"]},
		{"slug": "street", "title": "Street Photography", "summary": "Candid moments.", "lecturers": ["Tomás Rivera"]},
		{"slug": "cafe", "title": "Café Shots", "summary": "Coffee and food.", "level": "intermediate", "url": "https://elsewhere.example/cafe"}
	],
	"events": [
		{"slug": "portrait-lighting-workshop", "title": "Portrait Lighting Workshop", "starts_at": "2027-03-13T10:00:00+01:00"}
	],
	"membership_plans": [{"slug": "monthly", "name": "All Courses, Monthly", "interval": "month", "price": {"amount": 19, "currency": "EUR"}}],
	"digital_products": [{"slug": "posing-guide", "title": "The Posing Guide", "description": "80 pages on portrait posing"}]
}`

func slugsOf(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Kind + ":" + h.Slug
	}
	return out
}

func TestSearchRanking(t *testing.T) {
	ix := NewIndex(testOrigin, mustParse(t, searchFeed))
	tests := []struct {
		name  string
		query string
		kind  string
		limit int
		want  []string // exact ranked result
	}{
		{"title above tag above summary", "portrait", "course", 0,
			[]string{"course:portrait", "course:tagged", "course:basics"}},
		{"every kind", "portrait", "", 0,
			[]string{"course:portrait", "event:portrait-lighting-workshop", "course:tagged", "course:basics", "product:posing-guide"}},
		{"whole phrase in title first", "portrait lighting", "", 2,
			[]string{"event:portrait-lighting-workshop", "course:portrait"}},
		{"case and accents", "CAFE", "", 0, []string{"course:cafe"}},
		{"accented query", "tomás", "", 0, []string{"course:street"}},
		{"accent-free lecturer", "tomas rivera", "", 0, []string{"course:street"}},
		{"prefix", "photo", "course", 0, []string{"course:portrait", "course:street"}},
		{"extra text field", "intermediate", "", 0, []string{"course:cafe"}},
		{"plan interval", "month", "plan", 0, []string{"plan:monthly"}},
		{"no match", "underwater", "", 0, []string{}},
		{"unknown kind", "portrait", "webinar", 0, []string{}},
		{"limit", "portrait", "", 1, []string{"course:portrait"}},
		{"single letter is exact only", "p", "", 0, []string{}},
		{"repeated words count once", "street street street", "", 0, []string{"course:street"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slugsOf(ix.Search(tt.query, tt.kind, tt.limit))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Search(%q, %q) = %v, want %v", tt.query, tt.kind, got, tt.want)
			}
		})
	}
}

func TestSearchAllWordsBeatSomeWords(t *testing.T) {
	ix := NewIndex(testOrigin, mustParse(t, searchFeed))
	hits := ix.Search("candid street", "", 0)
	if len(hits) < 2 || hits[0].Slug != "street" || hits[0].Score <= hits[1].Score {
		t.Fatalf("got %v", hits)
	}
}

func TestSearchEmptyQueryListsInFeedOrder(t *testing.T) {
	ix := NewIndex(testOrigin, mustParse(t, searchFeed))
	got := slugsOf(ix.Search("  ", "", 0))
	want := []string{"course:basics", "course:portrait", "course:tagged", "course:street", "course:cafe",
		"event:portrait-lighting-workshop", "plan:monthly", "product:posing-guide"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v", got)
	}
	if got := slugsOf(ix.Search("", "product", 0)); !slices.Equal(got, []string{"product:posing-guide"}) {
		t.Fatalf("kind filter: %v", got)
	}
	if got := ix.Search("", "", 3); len(got) != 3 {
		t.Fatalf("limit: %d", len(got))
	}
}

func TestSearchLimitBounds(t *testing.T) {
	ix := NewIndex(testOrigin, mustParse(t, string(generatedFeed(200))))
	tests := []struct{ limit, want int }{{0, DefaultLimit}, {-5, DefaultLimit}, {7, 7}, {MaxLimit, MaxLimit}, {1000, MaxLimit}}
	for _, tt := range tests {
		if got := len(ix.Search("learn", "", tt.limit)); got != tt.want {
			t.Errorf("limit %d: %d hits, want %d", tt.limit, got, tt.want)
		}
		if got := len(ix.Search("", "", tt.limit)); got != tt.want {
			t.Errorf("browse limit %d: %d hits, want %d", tt.limit, got, tt.want)
		}
	}
}

func TestHitFields(t *testing.T) {
	ix := NewIndex(testOrigin, mustParse(t, searchFeed))
	h := ix.Search("monthly", "", 1)[0]
	if h.Title != "All Courses, Monthly" || h.Price == nil || h.Price.Amount != 19 || h.Interval != "month" ||
		h.URL != testOrigin+"/memberships/monthly" || h.Score <= 0 {
		t.Fatalf("plan hit: %+v", h)
	}
	h = ix.Search("posing guide", "product", 1)[0]
	if h.Summary != "80 pages on portrait posing" {
		t.Fatalf("summary from extra description: %+v", h)
	}
	h = ix.Search("workshop", "", 1)[0]
	if h.StartsAt != "2027-03-13T10:00:00+01:00" {
		t.Fatalf("event hit: %+v", h)
	}
}

// tokens is the words of s as the index and queries see them before
// stemming: normalized, case-folded, accents removed.
func tokens(s string) []string {
	var out []string
	splitWords(compatText(s), func(w string) {
		out = append(out, foldWord(lowerWord(w)))
	})
	return out
}

func TestTokens(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Long-Exposure, NIGHT!", []string{"long", "exposure", "night"}},
		{"Tomás Ñandú Straße Œuvre", []string{"tomas", "nandu", "strasse", "oeuvre"}},
		{"Søren Łódź Æsir ﬁlm", []string{"soren", "lodz", "aesir", "film"}}, // no decomposition; a ligature
		{"Cafe\u0301 ＡＢＣ", []string{"cafe", "abc"}},                         // a combining accent; full-width letters
		{"ΚΑΛΗΜΈΡΑ", []string{"καλημερα"}},                                  // Greek: tonos folded
		{"a\xffb", []string{"a", "b"}},                                      // invalid UTF-8 separates
		{"写真 2027", []string{"写真", "2027"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := tokens(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("tokens(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

const typoFeed = `{
	"school": {"name": "S"},
	"courses": [
		{"slug": "navigation", "title": "Celestial Navigation with a Sextant"},
		{"slug": "night", "title": "Night Walks"},
		{"slug": "light", "title": "Light and Shadow"},
		{"slug": "tea", "title": "Tea Ceremony"},
		{"slug": "lightroom", "title": "Editing in Lightroom", "tags": ["software"]},
		{"slug": "calligraphy", "title": "Modern Calligraphy"},
		{"slug": "python", "title": "Python for Beginners", "summary": "Course 2027 for beginners."}
	]
}`

func TestSearchTypos(t *testing.T) {
	ix := NewIndex(testOrigin, mustParse(t, typoFeed))
	tests := []struct {
		name, query string
		want        []string // ranked slugs
		matched     []string // Matched of each hit
	}{
		{"one substitution", "sextent", []string{"navigation"}, []string{`"Sextant" for "sextent"`}},
		{"one deletion", "lightrom", []string{"lightroom"}, []string{`"Lightroom" for "lightrom"`}},
		{"a swap is one edit", "pyhton", []string{"python"}, []string{`"Python" for "pyhton"`}},
		{"two edits from eight letters", "calligrafy", []string{"calligraphy"}, []string{`"Calligraphy" for "calligrafy"`}},
		{"two edits under eight letters", "seksant", []string{}, nil},
		{"exact above fuzzy", "light", []string{"light", "lightroom", "night"}, []string{"", "", `"Night" for "light"`}},
		{"no typo under four letters", "tee", []string{}, nil},
		{"no typo in numbers", "2026", []string{}, nil},
		{"the typo counts as a matched word", "lightrom editing", []string{"lightroom"}, []string{`"Lightroom" for "lightrom"`}},
		{"every fuzzy word explained", "pyhton begginers", []string{"python"}, []string{`"Python" for "pyhton", "Beginners" for "begginers"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := ix.Search(tt.query, "", 0)
			var got, matched []string
			for _, h := range hits {
				got = append(got, h.Slug)
				matched = append(matched, h.Matched)
			}
			if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Fatalf("Search(%q) = %v, want %v", tt.query, got, tt.want)
			}
			if tt.matched != nil && !slices.Equal(matched, tt.matched) {
				t.Fatalf("Search(%q) matched %q, want %q", tt.query, matched, tt.matched)
			}
		})
	}
}

func TestCheckQuery(t *testing.T) {
	ix := NewIndex(testOrigin, mustParse(t, searchFeed))
	many := make([]string, 20)
	for i := range many {
		many[i] = "word" + string(rune('a'+i))
	}
	tests := []struct {
		name, query string
		want        string // "" for nil, else a part of the error
	}{
		{"words", "portrait lighting", ""},
		{"blank lists the catalog", "   ", ""},
		{"empty lists the catalog", "", ""},
		{"stop words around a word", "courses about the sea", ""},
		{"only stop words", "what is the", "too common"},
		{"only punctuation", "?!... --- ***", "no letters or digits"},
		{"regular expression", ".*[a-z]+(?:x)", ""},
		{"regular expression without words", `.*+?()[]{}|\^$`, "no letters or digits"},
		{"invalid UTF-8", "portr\xffait", "not valid UTF-8"},
		{"10 KB", strings.Repeat("a", 10<<10), "10240 characters"},
		{"just long enough", strings.Repeat("é", MaxQueryLength), ""},
		{"1,000 words", strings.Repeat("portrait ", 1000), "characters"},
		{"more words than count", strings.Join(many, " "), "more than 16"},
		{"repeated words count once", strings.Repeat("photo ", 80), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ix.CheckQuery(tt.query)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("CheckQuery: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("CheckQuery = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// searchTimeLimit catches a search that does work out of proportion to
// its query (a query word expanding without bound, a walk that does not
// prune), not slowness: a search takes microseconds, and the bound leaves
// room for a loaded two-core machine and the race detector.
const searchTimeLimit = 200 * time.Millisecond

func FuzzSearch(f *testing.F) {
	big, err := Parse(generatedFeed(3000))
	if err != nil {
		f.Fatal(err)
	}
	indexes := []*Index{NewIndex(testOrigin, mustParse(f, searchFeed)), NewIndex(testOrigin, big)}
	f.Add("portrait lighting", "", 5)
	f.Add("é\x00ß", "course", -1)
	f.Add("", "event", 100)
	f.Add(strings.Repeat("photography ", 900), "", 50)                      // 10 KB
	f.Add(strings.Repeat("lighting portrait editing studio ", 250), "", 50) // 1,000 words
	f.Add("the of and about what is", "", 10)                               // only stop words
	f.Add("!!! ... ??? --- ***", "", 10)                                    // only punctuation
	f.Add("\xff\xfe\xc3(\xa0\xa1", "", 10)                                  // invalid UTF-8
	f.Add(`^(a+)+$ .*[photo]{2,}? \d+|(?i)lighting`, "", 10)                // looks like a regular expression
	f.Add(strings.Repeat("ph ", 200), "", 50)                               // short prefixes, repeated
	f.Add("photografy lihgting portrat landscpae edtiing", "", 50)          // a typo in every word
	f.Fuzz(func(t *testing.T, q, kind string, limit int) {
		for _, ix := range indexes {
			start := time.Now()
			hits := ix.Search(q, kind, limit)
			if d := time.Since(start); d > searchTimeLimit {
				runtime.GC() // a collection may have run in the middle: measure again
				start = time.Now()
				ix.Search(q, kind, limit)
				if d := time.Since(start); d > searchTimeLimit {
					t.Fatalf("Search of a %d-byte query took %v", len(q), d)
				}
			}
			if len(hits) > MaxLimit {
				t.Fatalf("%d hits", len(hits))
			}
			for i := 1; i < len(hits); i++ {
				if hits[i].Score > hits[i-1].Score {
					t.Fatalf("not ranked: %v", hits)
				}
			}
			for _, h := range hits {
				if strings.TrimSpace(q) != "" && (h.Score <= 0 || h.Score > 1) {
					t.Fatalf("score %v out of (0, 1]", h.Score)
				}
				if !utf8.ValidString(h.Matched) {
					t.Fatalf("matched %q", h.Matched)
				}
			}
			start = time.Now()
			err := ix.CheckQuery(q)
			if d := time.Since(start); d > searchTimeLimit {
				t.Fatalf("CheckQuery of a %d-byte query took %v", len(q), d)
			}
			if err == nil && strings.TrimSpace(q) == "" && len(hits) == 0 && kind == "" {
				t.Fatalf("a blank query lists the catalog")
			}
		}
	})
}

func BenchmarkSearch(b *testing.B) {
	f, err := Parse(generatedFeed(10000))
	if err != nil {
		b.Fatal(err)
	}
	ix := NewIndex(testOrigin, f)
	queries := []string{"portrait lighting", "photo", "advanced night photography", "tomas", "course-9999", "underwater basket weaving"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		ix.Search(queries[i%len(queries)], "", DefaultLimit)
	}
}

// BenchmarkSearchQueries times kinds of query one by one over 10,000
// courses: an exact two-word query, a short prefix matching every course,
// a stemmed form, typos, and words found nowhere (every expansion tried,
// nothing to rank).
func BenchmarkSearchQueries(b *testing.B) {
	f, err := Parse(generatedFeed(10000))
	if err != nil {
		b.Fatal(err)
	}
	ix := NewIndex(testOrigin, f)
	for _, q := range []string{"portrait lighting", "photo", "portraits", "lihgting", "photografy", "underwater basket weaving"} {
		b.Run(q, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ix.Search(q, "", DefaultLimit)
			}
		})
	}
}

// BenchmarkNewIndex builds the index of 10,000 courses; heap-KB is what
// the index keeps beyond the feed it is built from.
func BenchmarkNewIndex(b *testing.B) {
	f, err := Parse(generatedFeed(10000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var ix *Index
	for b.Loop() {
		ix = NewIndex(testOrigin, f)
	}
	b.StopTimer()
	ix = nil
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix = NewIndex(testOrigin, f)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(ix)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/1024, "heap-KB")
}

// Searches share pooled scratch memory: whatever ran before, concurrently
// or not, and on catalogs of other sizes, a query finds the same results.
func TestSearchScratchIsClean(t *testing.T) {
	big, err := Parse(generatedFeed(3000))
	if err != nil {
		t.Fatal(err)
	}
	small, err := Parse(demoFeed(t))
	if err != nil {
		t.Fatal(err)
	}
	ixBig, ixSmall := NewIndex(testOrigin, big), NewIndex(testOrigin, small)
	queries := []string{"portrait lighting", "photo", "studio", "light natural", "zzz", "course 12", "ph", "lihgting portriat", "photografy"}
	want := map[string][]string{}
	for _, q := range queries {
		want["big"+q] = slugsOf(ixBig.Search(q, "", 20))
		want["small"+q] = slugsOf(ixSmall.Search(q, "", 20))
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				q := queries[(g+i)%len(queries)]
				if got := slugsOf(ixBig.Search(q, "", 20)); !slices.Equal(got, want["big"+q]) {
					t.Errorf("big %q: %v, want %v", q, got, want["big"+q])
					return
				}
				if got := slugsOf(ixSmall.Search(q, "", 20)); !slices.Equal(got, want["small"+q]) {
					t.Errorf("small %q: %v, want %v", q, got, want["small"+q])
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

// A search with a small limit returns the head of the same search with a
// larger one, hit for hit and score for score: with few results asked
// for, only the items matching every word are ranked, and that must never
// lose a result a full ranking of every matched item would have given.
func TestSearchLimitIsAPrefix(t *testing.T) {
	f, err := Parse(generatedFeed(3000))
	if err != nil {
		t.Fatal(err)
	}
	ix := NewIndex(testOrigin, f)
	queries := []string{"portrait lighting", "photo", "advanced night", "street food beginner", "lihgting portriat",
		"studio lena", "tomas", "wildlife course 12", "editing photografy", "landscape zzz"}
	for _, q := range queries {
		for _, kind := range []string{"", KindCourse, KindEvent} {
			all := ix.Search(q, kind, MaxLimit)
			for _, limit := range []int{1, 3, 10, 25} {
				got := ix.Search(q, kind, limit)
				want := all[:min(limit, len(all))]
				if !slices.Equal(got, want) {
					t.Errorf("%q kind %q limit %d:\n got %v\nwant %v", q, kind, limit, hitsDebug(got), hitsDebug(want))
				}
			}
		}
	}
}

func hitsDebug(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Slug + "=" + strconv.FormatFloat(h.Score, 'f', 4, 64)
	}
	return out
}
