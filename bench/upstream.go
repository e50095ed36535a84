package main

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/schoolgate/schoolgate/catalog/catalogtest"
)

// The bench's own legacy server: as small as a real one could be, so that
// what is measured is the proxy in front of it, not the school. It honours
// the backend contract the gateway needs (session endpoint, catalog feed,
// Account API and admin API paths). accountDelay, when set, is how long
// its Account API takes to answer: a slow legacy server (-noisy).

const benchCookie = "bench_session"

// member is the identity of every signed-in bench request.
var member = map[string]any{"sub": "member-1", "email": "student@bench.example", "name": "Bench Student",
	"org_id": "org-bench", "roles": []string{"student"}}

var accountAnswer = []byte(`{"data":{"viewer":{"id":"member-1","email":"student@bench.example",` +
	`"enrolledCourses":{"nodes":[{"slug":"course-00001","expireDate":null,"hasLifetimeAccess":true}]}}}}`)

func serveUpstream(addr string, courses int, assertionIssuer string, accountDelay time.Duration) error {
	asserted := newAssertionCheck(assertionIssuer, "http://"+addr)
	feed, err := catalogtest.Feed(courses)
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
		if accountDelay > 0 {
			select {
			case <-time.After(accountDelay):
			case <-r.Context().Done():
				return
			}
		}
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
