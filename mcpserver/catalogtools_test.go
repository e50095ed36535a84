package mcpserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/catalog"
)

func TestSearchCatalog(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name      string
		args      map[string]any
		wantFirst string // kind:slug of the best hit
		wantCount int    // -1: any number > 0
	}{
		{"title ranks first", map[string]any{"query": "portrait"}, "course:portrait-photography", -1},
		{"kind filter", map[string]any{"query": "portrait", "kind": "event"}, "event:portrait-lighting-workshop", 1},
		{"plans", map[string]any{"query": "yearly", "kind": "plan"}, "plan:yearly", 1},
		{"accent-insensitive lecturer", map[string]any{"query": "tomas rivera"}, "course:street-photography", 3},
		{"limit", map[string]any{"query": "photography", "limit": 2}, "", 2},
		{"empty query browses", map[string]any{"query": "", "kind": "product"}, "product:lightroom-preset-pack", 3},
		{"no match", map[string]any{"query": "underwater basket weaving"}, "", 0},
		{"another form of a word", map[string]any{"query": "portraits"}, "course:portrait-photography", -1},
		{"stop words ignored", map[string]any{"query": "courses about the portraits"}, "course:portrait-photography", -1},
		{"a typo", map[string]any{"query": "lightrom", "kind": "course"}, "course:editing-in-lightroom", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out searchResult
			h.as(t).okTool("", toolSearchCatalog, tt.args, &out)
			if out.Count != len(out.Results) || tt.wantCount >= 0 && out.Count != tt.wantCount || tt.wantCount < 0 && out.Count == 0 {
				t.Fatalf("count %d (%d results), want %d", out.Count, len(out.Results), tt.wantCount)
			}
			if tt.wantFirst != "" {
				first := out.Results[0]
				if got := first.Kind + ":" + first.Slug; got != tt.wantFirst {
					t.Fatalf("first hit %s, want %s", got, tt.wantFirst)
				}
				if !strings.HasPrefix(first.URL, testOrigin+"/") || first.Title == "" {
					t.Fatalf("hit without url or title: %+v", first)
				}
			}
		})
	}
	var out searchResult
	h.okTool("", toolSearchCatalog, map[string]any{"query": "portrait photography"}, &out)
	if p := out.Results[0].Price; p == nil || p.Amount != 99 || p.Currency != "EUR" {
		t.Fatalf("price: %+v", out.Results[0])
	}
	if out.Results[0].Matched != "" || out.Results[0].Score <= 0 || out.Results[0].Score > 1 {
		t.Fatalf("an exact hit: %+v", out.Results[0])
	}
}

// A hit found only by tolerating a typo says what stood in for the
// query's word, in the structured result and in the text an agent reads.
func TestSearchCatalogSaysWhatATypoMatched(t *testing.T) {
	h := newHarness(t)
	var out map[string]any
	h.okTool("", toolSearchCatalog, map[string]any{"query": "lightrom presets", "limit": 3}, &out)
	results, _ := out["results"].([]any)
	if len(results) == 0 {
		t.Fatalf("no results: %v", out)
	}
	first, _ := results[0].(map[string]any)
	if first["slug"] != "lightroom-preset-pack" || first["matched"] != `"Lightroom" for "lightrom"` {
		t.Fatalf("first result: %v", first)
	}
}

func TestSearchCatalogErrors(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name string
		args any
		want string
	}{
		{"missing query", map[string]any{}, "query"},
		{"bad kind", map[string]any{"query": "x", "kind": "webinar"}, "kind"},
		{"limit too high", map[string]any{"query": "x", "limit": 51}, "limit"},
		{"limit zero", map[string]any{"query": "x", "limit": 0}, "limit"},
		{"limit not integer", map[string]any{"query": "x", "limit": 2.5}, "limit"},
		{"query not string", map[string]any{"query": 5}, "query"},
		{"unknown argument", map[string]any{"query": "x", "sort": "price"}, "sort"},
		{"arguments not an object", []any{"portrait"}, "object"},
		{"only stop words", map[string]any{"query": "what is the"}, "too common"},
		{"only punctuation", map[string]any{"query": "?!*"}, "no letters or digits"},
		{"10 KB", map[string]any{"query": strings.Repeat("photo ", 1700)}, "characters long"},
		{"too many words", map[string]any{"query": "a1 b2 c3 d4 e5 f6 g7 h8 i9 j10 k11 l12 m13 n14 o15 p16 q17"}, "more than 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.as(t).failTool("", toolSearchCatalog, tt.args, tt.want)
		})
	}
}

func TestCatalogNotLoaded(t *testing.T) {
	h := newHarness(t)
	h.index.Store(nil)
	for _, tool := range []struct {
		name string
		args map[string]any
	}{
		{toolSearchCatalog, map[string]any{"query": "x"}},
		{toolGetCourse, map[string]any{"slug": "x"}},
		{toolListEvents, map[string]any{}},
		{toolListMembershipPlans, map[string]any{}},
	} {
		h.failTool("", tool.name, tool.args, "not been loaded yet")
	}
}

func TestGetCourse(t *testing.T) {
	raw := `{"school":{"name":"S"},"courses":[
		{"slug":"portrait-photography","title":"Portrait Photography","price":{"amount":99,"currency":"EUR"},"lecturers":["Priya Nair"],"level":"intermediate","modules":[{"title":"Posing"}]},
		{"slug":"hosted","title":"Hosted Elsewhere","url":"https://elsewhere.example/hosted"}]}`
	f, err := catalog.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.index.Store(catalog.NewIndex(testOrigin, f))

	var c map[string]any
	h.okTool("", toolGetCourse, map[string]any{"slug": "portrait-photography"}, &c)
	if c["title"] != "Portrait Photography" || c["level"] != "intermediate" || c["url"] != testOrigin+"/courses/portrait-photography" {
		t.Fatalf("course: %v", c)
	}
	if mods, _ := c["modules"].([]any); len(mods) != 1 {
		t.Fatalf("extra fields must be shown: %v", c)
	}
	h.okTool("", toolGetCourse, map[string]any{"slug": "hosted"}, &c)
	if c["url"] != "https://elsewhere.example/hosted" {
		t.Fatalf("course url field must win: %v", c["url"])
	}
}

func TestGetCourseErrors(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"unknown slug suggests", map[string]any{"slug": "portrait"}, "portrait-photography"},
		{"unknown slug points to search", map[string]any{"slug": "zzz"}, "search_catalog"},
		{"plan slug is not a course", map[string]any{"slug": "yearly"}, "No course"},
		{"missing slug", map[string]any{}, "slug"},
		{"empty slug", map[string]any{"slug": ""}, "slug"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.as(t).failTool("", toolGetCourse, tt.args, tt.want)
		})
	}
}

func TestListEvents(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name string
		args map[string]any
		want []string
	}{
		{"default is every event", map[string]any{}, []string{"winter-light-photo-walk", "year-in-review-webinar", "portrait-lighting-workshop", "astro-night-camp"}},
		{"from a day", map[string]any{"from": "2026-12-12"}, []string{"winter-light-photo-walk", "year-in-review-webinar", "portrait-lighting-workshop", "astro-night-camp"}},
		{"date range, to is the whole day", map[string]any{"from": "2027-01-01", "to": "2027-03-13"}, []string{"year-in-review-webinar", "portrait-lighting-workshop"}},
		{"date-time from", map[string]any{"from": "2027-03-14T12:00:00+01:00"}, []string{"portrait-lighting-workshop", "astro-night-camp"}},
		{"only to", map[string]any{"to": "2026-12-31"}, []string{"winter-light-photo-walk"}},
		{"same day range", map[string]any{"from": "2027-01-20", "to": "2027-01-20"}, []string{"year-in-review-webinar"}},
		{"past", map[string]any{"from": "2020-01-01", "to": "2020-12-31"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out struct {
				From   string           `json:"from"`
				Count  int              `json:"count"`
				Total  int              `json:"total"`
				Events []map[string]any `json:"events"`
			}
			h.as(t).okTool("", toolListEvents, tt.args, &out)
			var got []string
			for _, e := range out.Events {
				got = append(got, e["slug"].(string))
				if !strings.HasPrefix(e["url"].(string), testOrigin+"/events/") || e["starts_at"] == nil {
					t.Fatalf("event without url or start: %v", e)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") || out.Count != len(tt.want) || out.Total != len(tt.want) {
				t.Fatalf("events %v (count %d, total %d), want %v", got, out.Count, out.Total, tt.want)
			}
		})
	}
}

func TestListEventsCap(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"school":{"name":"S"},"events":[`)
	for i := range maxEvents + 20 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"slug":"e-%d","title":"E","starts_at":"2027-01-01T10:00:00Z"}`, i)
	}
	b.WriteString(`]}`)
	f, err := catalog.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.index.Store(catalog.NewIndex(testOrigin, f))
	var out eventsResult
	h.okTool("", toolListEvents, map[string]any{}, &out)
	if out.Count != maxEvents || out.Total != maxEvents+20 {
		t.Fatalf("count %d total %d", out.Count, out.Total)
	}
}

func TestListEventsErrors(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"bad from", map[string]any{"from": "next tuesday"}, "from"},
		{"bad to", map[string]any{"to": "2027-13-01"}, "to"},
		{"to before from", map[string]any{"from": "2027-02-01", "to": "2027-01-01"}, "before"},
		{"number", map[string]any{"from": 2027}, "from"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.as(t).failTool("", toolListEvents, tt.args, tt.want)
		})
	}
}

func TestListMembershipPlans(t *testing.T) {
	h := newHarness(t)
	var out struct {
		Count int              `json:"count"`
		Plans []map[string]any `json:"plans"`
	}
	h.okTool("", toolListMembershipPlans, map[string]any{}, &out)
	if out.Count != 3 || out.Plans[0]["slug"] != "monthly" || out.Plans[0]["interval"] != "month" ||
		out.Plans[0]["url"] != testOrigin+"/memberships/monthly" {
		t.Fatalf("plans: %+v", out)
	}
	if price, _ := out.Plans[1]["price"].(map[string]any); price["amount"] != 190.0 || price["currency"] != "EUR" {
		t.Fatalf("price: %v", out.Plans[1])
	}
	h.okTool("", toolListMembershipPlans, nil, nil)
	h.failTool("", toolListMembershipPlans, map[string]any{"all": true}, "all")
}
