package catalog

import (
	"slices"
	"testing"
	"time"
)

const eventsFeed = `{
	"school": {"name": "S"},
	"events": [
		{"slug": "late", "title": "Late", "starts_at": "2027-08-06T18:00:00+02:00", "ends_at": "2027-08-08T12:00:00+02:00"},
		{"slug": "early", "title": "Early", "starts_at": "2026-12-12T14:00:00+01:00", "ends_at": "2026-12-12T17:00:00+01:00"},
		{"slug": "point", "title": "Point", "starts_at": "2027-01-20T18:00:00Z"},
		{"slug": "same-start", "title": "Same start as point", "starts_at": "2027-01-20T19:00:00+01:00"}
	]
}`

func eventSlugs(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Slug
	}
	return out
}

func TestEventsRange(t *testing.T) {
	ix := NewIndex(testOrigin, mustParse(t, eventsFeed))
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	tests := []struct {
		name     string
		from, to time.Time
		want     []string
	}{
		{"open range, sorted by start then feed order", time.Time{}, time.Time{}, []string{"early", "point", "same-start", "late"}},
		{"from excludes ended", at("2027-01-01T00:00:00Z"), time.Time{}, []string{"point", "same-start", "late"}},
		{"in progress at from", at("2027-08-07T00:00:00Z"), time.Time{}, []string{"late"}},
		{"to is inclusive of start", time.Time{}, at("2027-01-20T18:00:00Z"), []string{"early", "point", "same-start"}},
		{"window", at("2026-12-13T00:00:00Z"), at("2027-02-01T00:00:00Z"), []string{"point", "same-start"}},
		{"empty window", at("2028-01-01T00:00:00Z"), time.Time{}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := eventSlugs(ix.Events(tt.from, tt.to)); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestURLs(t *testing.T) {
	ix := NewIndex(testOrigin+"/", mustParse(t, searchFeed))
	tests := []struct{ kind, slug, want string }{
		{KindCourse, "basics", testOrigin + "/courses/basics"},
		{KindCourse, "cafe", "https://elsewhere.example/cafe"},
		{KindEvent, "portrait-lighting-workshop", testOrigin + "/events/portrait-lighting-workshop"},
		{KindPlan, "monthly", testOrigin + "/memberships/monthly"},
		{KindProduct, "posing-guide", testOrigin + "/products/posing-guide"},
		{KindCourse, "not-in-feed", testOrigin + "/courses/not-in-feed"},
		{"webinar", "x", ""},
	}
	for _, tt := range tests {
		if got := ix.URL(tt.kind, tt.slug); got != tt.want {
			t.Errorf("URL(%s, %s) = %q, want %q", tt.kind, tt.slug, got, tt.want)
		}
	}
}

func TestURLIgnoresNonHTTPExtra(t *testing.T) {
	for _, u := range []string{`"javascript:alert(1)"`, `"/relative"`, `42`, `"https://"`} {
		ix := NewIndex(testOrigin, mustParse(t, `{"school":{"name":"S"},"courses":[{"slug":"a","title":"A","url":`+u+`}]}`))
		if got := ix.URL(KindCourse, "a"); got != testOrigin+"/courses/a" {
			t.Errorf("url %s: got %q", u, got)
		}
	}
}

func TestLookups(t *testing.T) {
	f := mustParse(t, searchFeed)
	ix := NewIndex(testOrigin, f)
	c, ok := ix.Course("cafe")
	if !ok || c.Title != "Café Shots" || string(c.Extra["level"]) != `"intermediate"` {
		t.Fatalf("Course: %+v %v", c, ok)
	}
	if _, ok := ix.Course("monthly"); ok {
		t.Fatal("a plan slug is not a course")
	}
	if ix.Feed() != f {
		t.Fatal("Feed must return the indexed feed")
	}
	plans := ix.Plans()
	plans[0].Name = "changed"
	if ix.Plans()[0].Name == "changed" {
		t.Fatal("Plans must not expose the index's slice")
	}
	if len(ix.Products()) != 1 {
		t.Fatal("Products")
	}
}

func TestNewIndexToleratesUnvalidatedFeed(t *testing.T) {
	f := &Feed{
		Courses: []Course{{Slug: "a", Title: "First"}, {Slug: "a", Title: "Second"}},
		Events:  []Event{{Slug: "bad", Title: "Bad", StartsAt: "soon"}},
	}
	ix := NewIndex(testOrigin, f)
	if c, _ := ix.Course("a"); c.Title != "First" {
		t.Fatalf("first duplicate must win: %q", c.Title)
	}
	if len(ix.Events(time.Time{}, time.Time{})) != 0 {
		t.Fatal("undated event listed")
	}
	if NewIndex(testOrigin, nil).Search("", "", 0) != nil {
		t.Fatal("nil feed")
	}
}
