package catalog

import (
	"slices"
	"sync"
	"testing"
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

func TestTokens(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Long-Exposure, NIGHT!", []string{"long", "exposure", "night"}},
		{"Tomás Ñandú Straße Œuvre", []string{"tomas", "nandu", "strasse", "oeuvre"}},
		{"写真 2027", []string{"写真", "2027"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := tokens(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("tokens(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzSearch(f *testing.F) {
	ix := NewIndex(testOrigin, mustParse(f, searchFeed))
	f.Add("portrait lighting", "", 5)
	f.Add("é\x00ß", "course", -1)
	f.Add("", "event", 100)
	f.Fuzz(func(t *testing.T, q, kind string, limit int) {
		hits := ix.Search(q, kind, limit)
		if len(hits) > MaxLimit {
			t.Fatalf("%d hits", len(hits))
		}
		for i := 1; i < len(hits); i++ {
			if hits[i].Score > hits[i-1].Score {
				t.Fatalf("not ranked: %v", hits)
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

func BenchmarkNewIndex(b *testing.B) {
	f, err := Parse(generatedFeed(10000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		NewIndex(testOrigin, f)
	}
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
	queries := []string{"portrait lighting", "photo", "studio", "light natural", "zzz", "course 12", "ph"}
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
