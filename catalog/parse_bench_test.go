package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParse parses the feed the bench's schools scenario imports into
// every new school (40 courses) and one the size of its -courses 10000.
func BenchmarkParse(b *testing.B) {
	for _, n := range []int{40, 10000} {
		raw := benchFeed(b, n)
		b.Run(fmt.Sprintf("courses=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchFeed builds the catalog the bench generates: n courses with a
// summary, a price, a lecturer and two tags, and one event, plan and
// product, as encoding/json writes it.
func benchFeed(tb testing.TB, n int) []byte {
	tb.Helper()
	subjects := []string{"Portrait", "Landscape", "Street", "Wildlife", "Macro", "Night", "Studio", "Film",
		"Drone", "Wedding", "Food", "Architecture", "Fashion", "Sports", "Travel", "Astro"}
	skills := []string{"lighting", "composition", "editing", "retouching", "exposure", "colour grading",
		"posing", "storytelling", "printing", "gear"}
	levels := []string{"Fundamentals", "Masterclass", "Workshop", "Bootcamp", "Essentials"}
	type price struct {
		Amount   float64 `json:"amount"`
		Currency string  `json:"currency"`
	}
	type course struct {
		Slug      string   `json:"slug"`
		Title     string   `json:"title"`
		Summary   string   `json:"summary"`
		Price     price    `json:"price"`
		Lecturers []string `json:"lecturers"`
		Tags      []string `json:"tags"`
	}
	cs := make([]course, n)
	for i := range cs {
		sub, sk, lv := subjects[i%len(subjects)], skills[(i/len(subjects))%len(skills)], levels[i%len(levels)]
		cs[i] = course{Slug: fmt.Sprintf("course-%05d", i+1),
			Title:     fmt.Sprintf("%s photography %s %s %d", sub, sk, lv, i+1),
			Summary:   fmt.Sprintf("Learn %s for %s photography, step by step.", sk, strings.ToLower(sub)),
			Price:     price{Amount: float64(19 + i%200), Currency: "EUR"},
			Lecturers: []string{fmt.Sprintf("Lecturer %d", i%97)},
			Tags:      []string{strings.ToLower(sub), sk}}
	}
	raw, err := json.Marshal(map[string]any{
		"school":  map[string]string{"name": "Bench School", "description": "A generated school for benchmarks."},
		"courses": cs,
		"events": []map[string]any{{"slug": "meetup", "title": "Photo walk", "starts_at": "2027-01-10T10:00:00Z",
			"ends_at": "2027-01-10T12:00:00Z", "price": price{10, "EUR"}}},
		"membership_plans": []map[string]any{{"slug": "monthly", "name": "Monthly", "price": price{29, "EUR"}, "interval": "month"}},
		"digital_products": []map[string]any{{"slug": "presets", "title": "Lightroom presets", "price": price{15, "EUR"}}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}
