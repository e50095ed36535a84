package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// callTool calls an MCP tool anonymously with mcp-go's stock client and
// returns the text of the result ("ERROR: …" for a tool error).
func callTool(t testing.TB, mcpURL, tool string, args map[string]any) string {
	t.Helper()
	return callToolWith(t, mcpURL, "", tool, args)
}

// callToolWith is callTool with a bearer token ("" for none).
func callToolWith(t testing.TB, mcpURL, token, tool string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var opts []transport.StreamableHTTPCOption
	if token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	}
	c, _ := initializedClient(ctx, t, mcpURL, opts...)
	defer c.Close()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var out strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			out.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "ERROR: " + out.String()
	}
	return out.String()
}

// TestCatalogRefreshThroughAdminAPI: an operator adds a course through the
// protected admin API; MCP keeps serving the imported catalog (no upstream
// call on the request path) until the catalog is refreshed through Caddy's
// admin API, and then the tools and documents show the course.
func TestCatalogRefreshThroughAdminAPI(t *testing.T) {
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	gw := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "site"), ""))
	mcpURL := gw.URL + "/mcp"
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(callTool(t, mcpURL, "search_catalog", map[string]any{"query": "photography"}), `"slug"`) {
		if time.Now().After(deadline) {
			t.Fatal("the catalog was never imported")
		}
		time.Sleep(200 * time.Millisecond)
	}

	client := registerLoopback(t, gw.URL)
	tok := tokenFor(t, gw.URL, client, "http://127.0.0.1:7777/callback", "courses:read courses:write",
		"owner@demo.school", "owner")
	course := `{"slug":"night-sky-e2e","title":"Night Sky Photography","summary":"Stars and the Milky Way.",` +
		`"price":{"amount":49,"currency":"EUR"},"lecturers":[],"tags":["astro"]}`
	if r := call(t, "POST", gw.URL+"/admin/api/courses", tok.AccessToken, course, nil); r.status != http.StatusCreated {
		t.Fatalf("creating a course: %d %s", r.status, r.body)
	}

	search := map[string]any{"query": "night sky"}
	if got := callTool(t, mcpURL, "search_catalog", search); strings.Contains(got, "night-sky-e2e") {
		t.Fatalf("the course is served before any refresh: %s", got)
	}
	admin := "http://" + gw.AdminAddr + "/schoolgate/catalog/refresh"
	if r := postJSON(t, admin, map[string]string{"issuer": gw.URL}); r.status != 200 {
		t.Fatalf("refresh: %d %s", r.status, r.body)
	}
	if got := callTool(t, mcpURL, "search_catalog", search); !strings.Contains(got, "night-sky-e2e") {
		t.Errorf("after the refresh search_catalog lacks the course: %s", got)
	}
	if got := callTool(t, mcpURL, "get_course", map[string]any{"slug": "night-sky-e2e"}); !strings.Contains(got, "Night Sky Photography") {
		t.Errorf("get_course: %s", got)
	}
	for _, doc := range []string{"/pricing.md", "/llms.txt"} {
		if _, _, body := get(t, gw.URL+doc); !strings.Contains(string(body), "Night Sky Photography") {
			t.Errorf("%s lacks the new course", doc)
		}
	}
	if r := postJSON(t, admin, map[string]string{"issuer": "http://nowhere.example"}); r.status != 404 {
		t.Errorf("refresh of an unknown school: %d", r.status)
	}
}

// TestFirstSearchWaitsForTheFirstImport: a school started on an empty data
// directory answers an agent's first search_catalog, sent while the first
// import of its feed is still under way, with that feed's results instead
// of telling it to come back in a minute; and its first llms.txt with the
// feed's courses, cacheable, instead of an empty school cached for five
// minutes.
func TestFirstSearchWaitsForTheFirstImport(t *testing.T) {
	sch := startSchool(t)
	requested := make(chan struct{}, 1)
	release := make(chan struct{})
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case requested <- struct{}{}:
		default:
		}
		<-release
		resp, err := http.Get(sch.URL + "/catalog.json")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.Copy(w, resp.Body)
	}))
	defer feed.Close()
	defer close(release)

	port := freePort(t)
	dir := t.TempDir()
	block := strings.Replace(siteBlock(port, sch.URL, filepath.Join(dir, "site"), ""),
		"catalog "+sch.URL+"/catalog.json", "catalog "+feed.URL+"/catalog.json", 1)
	gw := startGateway(t, dir, block)
	select {
	case <-requested:
	case <-time.After(15 * time.Second):
		t.Fatal("the gateway never asked for its feed")
	}

	if title := serverTitle(t, gw.URL+"/mcp"); title != gw.URL {
		t.Fatalf("before its catalog the school is called %q, want its origin", title)
	}
	got := make(chan string, 1)
	go func() { got <- callTool(t, gw.URL+"/mcp", "search_catalog", map[string]any{"query": "photography"}) }()
	// The content index agents read first waits for the catalog too.
	llms := make(chan response, 1)
	go func() { llms <- fetch(t, http.DefaultClient, gw.URL+"/llms.txt") }()
	select {
	case answer := <-got:
		t.Fatalf("search_catalog answered before the feed was in: %s", answer)
	case r := <-llms:
		t.Fatalf("llms.txt answered before the feed was in: %d %v\n%s", r.status, r.header, r.body)
	case <-time.After(500 * time.Millisecond):
	}
	release <- struct{}{}
	select {
	case answer := <-got:
		if !strings.Contains(answer, `"slug"`) {
			t.Fatalf("the first search did not wait for the first import: %s", answer)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("search_catalog never answered")
	}
	demo := readDemoFeed(t, sch.URL+"/catalog.json")
	select {
	case r := <-llms:
		if r.status != http.StatusOK || r.header.Get("Cache-Control") != "public, max-age=300" ||
			!strings.Contains(string(r.body), gw.URL+"/courses/"+demo.slugs[0]+")") {
			t.Fatalf("the first llms.txt did not wait for the first import: %d %v\n%s", r.status, r.header, r.body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("llms.txt never answered")
	}
	checkWholeDocuments(t, http.DefaultClient, gw.URL, demo)

	// The MCP server built for that first request named the school by its
	// origin; once the feed says what the school is called, agents are
	// greeted with that name.
	deadline := time.Now().Add(10 * time.Second)
	for title := serverTitle(t, gw.URL+"/mcp"); title != "Demo School of Photography"; title = serverTitle(t, gw.URL+"/mcp") {
		if time.Now().After(deadline) {
			t.Fatalf("after the import the MCP server is still called %q", title)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// serverTitle is the title an MCP server gives in its initialize answer.
func serverTitle(t testing.TB, mcpURL string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, res := initializedClient(ctx, t, mcpURL)
	defer c.Close()
	return res.ServerInfo.Title
}

// initializedClient is mcp-go's stock client, started and initialized
// against mcpURL; the caller closes it.
func initializedClient(ctx context.Context, t testing.TB, mcpURL string, opts ...transport.StreamableHTTPCOption) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	trans, err := transport.NewStreamableHTTP(mcpURL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans)
	if err := c.Start(ctx); err != nil {
		c.Close()
		t.Fatal(err)
	}
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "schoolgate-e2e", Version: "1"}}})
	if err != nil {
		c.Close()
		t.Fatalf("initialize: %v", err)
	}
	return c, res
}
