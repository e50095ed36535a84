// Package catalogtest makes catalog feeds for tests and benchmarks.
package catalogtest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Feed generates a catalog of n courses with varied words, plus an
// event, a plan and a product, in the feed format of the backend
// contract, as encoding/json writes it: the feed the bench serves its
// schools and the catalog package measures its parse with.
func Feed(n int) ([]byte, error) {
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
	return json.Marshal(map[string]any{
		"school":  map[string]string{"name": "Bench School", "description": "A generated school for benchmarks."},
		"courses": cs,
		"events": []map[string]any{{"slug": "meetup", "title": "Photo walk", "starts_at": "2027-01-10T10:00:00Z",
			"ends_at": "2027-01-10T12:00:00Z", "price": price{10, "EUR"}}},
		"membership_plans": []map[string]any{{"slug": "monthly", "name": "Monthly", "price": price{29, "EUR"}, "interval": "month"}},
		"digital_products": []map[string]any{{"slug": "presets", "title": "Lightroom presets", "price": price{15, "EUR"}}},
	})
}
