package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The bench's own legacy server: as small as a real one could be, so that
// what is measured is the proxy in front of it, not the school. It honours
// the backend contract the gateway needs (session endpoint, catalog feed,
// Account API and admin API paths).

const benchCookie = "bench_session"

// member is the identity of every signed-in bench request.
var member = map[string]any{"sub": "member-1", "email": "student@bench.example", "name": "Bench Student",
	"org_id": "org-bench", "roles": []string{"student"}}

var accountAnswer = []byte(`{"data":{"viewer":{"id":"member-1","email":"student@bench.example",` +
	`"enrolledCourses":{"nodes":[{"slug":"course-00001","expireDate":null,"hasLifetimeAccess":true}]}}}}`)

func serveUpstream(addr string, courses int, assertionIssuer string) error {
	asserted := newAssertionCheck(assertionIssuer, "http://"+addr)
	feed, err := catalogFeed(courses)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/session", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(benchCookie); err != nil || c.Value != "signed-in" {
			http.Error(w, `{"error":"not_signed_in"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(member)
	})
	mux.HandleFunc("GET /catalog.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(feed)
	})
	mux.HandleFunc("/account/graphql", func(w http.ResponseWriter, r *http.Request) {
		answer := accountAnswer
		if asserted.applies(r) {
			if err := asserted.check(r); err != nil {
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
			answer = assertedAnswer
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	return (&http.Server{Addr: addr, Handler: mux}).ListenAndServe()
}

// catalogFeed generates a catalog of n courses with varied words, plus a
// few events and plans, in the feed format of the backend contract.
func catalogFeed(n int) ([]byte, error) {
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

// serveNoopMCP is the baseline for /mcp: mcp-go's stateless Streamable
// HTTP with a tool that does nothing.
func serveNoopMCP(addr string) error {
	s := server.NewMCPServer("noop", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("search_catalog", mcp.WithDescription("does nothing"),
		mcp.WithString("query")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("[]"), nil
		})
	h := server.NewStreamableHTTPServer(s, server.WithStateLess(true), server.WithDisableLocalhostProtection(true))
	return (&http.Server{Addr: addr, Handler: h}).ListenAndServe()
}
