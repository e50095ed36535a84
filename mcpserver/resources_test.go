package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/schoolgate/schoolgate/catalog"
)

// demoResources is how many items the demo catalog has: 12 courses, 4
// events, 3 plans and 3 products.
const demoResources = 22

type listedResource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	MIMEType    string `json:"mimeType"`
}

type readContents struct {
	Contents []struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
		Text     string `json:"text"`
	} `json:"contents"`
}

// listResources follows resources/list to the last page and returns the
// resources and the size of each page.
func listResources(t testing.TB, h *harness, token string) ([]listedResource, []int) {
	t.Helper()
	var all []listedResource
	var pages []int
	params := map[string]any{}
	for range 100 {
		r := h.as(t).rpc(token, "resources/list", params)
		var page struct {
			Resources  []listedResource `json:"resources"`
			NextCursor string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(r.Result, &page); err != nil || r.Error != nil || page.Resources == nil {
			t.Fatalf("resources/list: %v %+v %s", err, r.Error, r.Result)
		}
		all = append(all, page.Resources...)
		pages = append(pages, len(page.Resources))
		if page.NextCursor == "" {
			return all, pages
		}
		params = map[string]any{"cursor": page.NextCursor}
	}
	t.Fatal("resources/list does not end")
	return nil, nil
}

// readResource reads uri and returns its one text content; a JSON-RPC
// error fails the test.
func readResource(t testing.TB, h *harness, token, uri string) string {
	t.Helper()
	r := h.as(t).rpc(token, "resources/read", map[string]any{"uri": uri})
	var res readContents
	if err := json.Unmarshal(r.Result, &res); err != nil || r.Error != nil {
		t.Fatalf("read %s: %v %+v", uri, err, r.Error)
	}
	if len(res.Contents) != 1 || res.Contents[0].URI != uri || res.Contents[0].MIMEType != "application/json" {
		t.Fatalf("read %s: contents %+v", uri, res.Contents)
	}
	return res.Contents[0].Text
}

// readError reads uri, which must fail, and returns the error.
func readError(t testing.TB, h *harness, uri string) rpcError {
	t.Helper()
	r := h.as(t).rpc("", "resources/read", map[string]any{"uri": uri})
	if r.Error == nil {
		t.Fatalf("read %q succeeded: %s", uri, r.Result)
	}
	return *r.Error
}

func TestResourcesCapability(t *testing.T) {
	h := newHarness(t)
	r := h.rpc("", "initialize", map[string]any{"protocolVersion": testVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}})
	var res struct {
		Capabilities struct {
			Resources *map[string]any `json:"resources"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || r.Error != nil {
		t.Fatalf("initialize: %v %+v", err, r.Error)
	}
	// Present, with neither subscribe nor listChanged: the server is
	// stateless and has nobody to notify.
	if res.Capabilities.Resources == nil || len(*res.Capabilities.Resources) != 0 {
		t.Fatalf("resources capability %v, want {}", res.Capabilities.Resources)
	}
}

func TestListResources(t *testing.T) {
	h := newHarness(t)
	want := []listedResource{
		{"school://courses/portrait-photography", "courses/portrait-photography", "Portrait Photography",
			"Course: Posing, directing and lighting people so they look like themselves, on location and at home.", "application/json"},
		{"school://events/winter-light-photo-walk", "events/winter-light-photo-walk", "Winter Light Photo Walk, Berlin",
			"Event: starts 2026-12-12T14:00:00+01:00", "application/json"},
		{"school://plans/monthly", "plans/monthly", "All Courses, Monthly", "Membership plan: billed per month", "application/json"},
		{"school://products/posing-guide", "products/posing-guide", "The Posing Guide (PDF, 80 pages)", "Digital product", "application/json"},
	}
	for _, token := range []string{"", "member", "noread"} {
		t.Run("token="+token, func(t *testing.T) {
			got, _ := listResources(t, h, token)
			if len(got) != demoResources {
				t.Fatalf("%d resources, want %d", len(got), demoResources)
			}
			byURI := map[string]listedResource{}
			for _, r := range got {
				byURI[r.URI] = r
				if r.MIMEType != "application/json" || r.Title == "" || r.Description == "" {
					t.Errorf("incomplete resource %+v", r)
				}
			}
			for _, w := range want {
				if byURI[w.URI] != w {
					t.Errorf("resource %s:\n got %+v\nwant %+v", w.URI, byURI[w.URI], w)
				}
			}
		})
	}
}

// TestReadResource checks that each kind of resource reads as exactly the
// JSON a tool shows for the item.
func TestReadResource(t *testing.T) {
	h := newHarness(t)
	// fromList picks the item with the slug out of a list tool's result.
	fromList := func(tool, field, slug string) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			var out map[string]json.RawMessage
			h.as(t).okTool("", tool, map[string]any{}, &out)
			var items []json.RawMessage
			if err := json.Unmarshal(out[field], &items); err != nil {
				t.Fatal(err)
			}
			for _, item := range items {
				var s struct{ Slug string }
				if json.Unmarshal(item, &s) == nil && s.Slug == slug {
					return item
				}
			}
			t.Fatalf("%s does not list %s", tool, slug)
			return nil
		}
	}
	tests := []struct {
		name, uri string
		want      func(t *testing.T) []byte
	}{
		{"course as get_course", "school://courses/portrait-photography", func(t *testing.T) []byte {
			return []byte(h.as(t).okTool("", toolGetCourse, map[string]any{"slug": "portrait-photography"}, nil).text())
		}},
		{"free course", "school://courses/smartphone-photography", func(t *testing.T) []byte {
			return []byte(h.as(t).okTool("", toolGetCourse, map[string]any{"slug": "smartphone-photography"}, nil).text())
		}},
		{"event as list_events", "school://events/portrait-lighting-workshop", fromList(toolListEvents, "events", "portrait-lighting-workshop")},
		{"plan as list_membership_plans", "school://plans/yearly", fromList(toolListMembershipPlans, "plans", "yearly")},
		{"product", "school://products/posing-guide", func(*testing.T) []byte {
			return []byte(`{"slug":"posing-guide","title":"The Posing Guide (PDF, 80 pages)","price":{"amount":12,"currency":"EUR"},"url":"` + testOrigin + `/products/posing-guide"}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, token := range []string{"", "member"} {
				if got, want := readResource(t, h, token, tt.uri), tt.want(t); !jsonEqual([]byte(got), want) {
					t.Fatalf("token %q: read %s\n got %s\nwant %s", token, tt.uri, got, want)
				}
			}
		})
	}
	// Not only equal JSON: the course reads byte for byte as get_course.
	tool := h.okTool("", toolGetCourse, map[string]any{"slug": "black-and-white"}, nil).text()
	if got := readResource(t, h, "", "school://courses/black-and-white"); got != tool {
		t.Fatalf("resource %s\n  tool %s", got, tool)
	}
}

func TestResourceTemplates(t *testing.T) {
	h := newHarness(t)
	r := h.rpc("", "resources/templates/list", map[string]any{})
	var res struct {
		ResourceTemplates []struct {
			URITemplate string `json:"uriTemplate"`
			Name        string `json:"name"`
			Title       string `json:"title"`
			Description string `json:"description"`
			MIMEType    string `json:"mimeType"`
		} `json:"resourceTemplates"`
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || r.Error != nil {
		t.Fatalf("templates/list: %v %+v", err, r.Error)
	}
	listed, _ := listResources(t, h, "")
	inList := map[string]bool{}
	for _, l := range listed {
		inList[l.URI] = true
	}
	tests := []struct{ template, slug string }{
		{"school://courses/{slug}", "street-photography"},
		{"school://events/{slug}", "astro-night-camp"},
		{"school://plans/{slug}", "studio-pass"},
		{"school://products/{slug}", "gear-checklist"},
	}
	if len(res.ResourceTemplates) != len(tests) || res.NextCursor != "" {
		t.Fatalf("templates %+v", res)
	}
	for i, tt := range tests {
		t.Run(tt.template, func(t *testing.T) {
			tmpl := res.ResourceTemplates[i]
			if tmpl.URITemplate != tt.template || tmpl.MIMEType != "application/json" || tmpl.Title == "" || len(tmpl.Description) < 40 {
				t.Fatalf("template %+v", tmpl)
			}
			// A client expands the template itself; the URI it builds is
			// the one resources/list gives and reads as the item.
			uri := strings.Replace(tmpl.URITemplate, "{slug}", tt.slug, 1)
			if !inList[uri] {
				t.Fatalf("%s is not in resources/list", uri)
			}
			var item struct{ Slug, URL string }
			if err := json.Unmarshal([]byte(readResource(t, h, "", uri)), &item); err != nil || item.Slug != tt.slug || !strings.HasPrefix(item.URL, testOrigin+"/") {
				t.Fatalf("read %s: %+v %v", uri, item, err)
			}
		})
	}
}

func TestReadResourceErrors(t *testing.T) {
	h := newHarness(t)
	tests := []struct{ name, uri string }{
		{"unknown course", "school://courses/underwater-basket-weaving"},
		{"slug of another kind", "school://courses/monthly"},
		{"unknown kind", "school://teachers/priya-nair"},
		{"extra path segment", "school://courses/portrait-photography/lessons"},
		{"page url instead of resource uri", testOrigin + "/courses/portrait-photography"},
		{"template itself", "school://courses/{slug}"},
		{"not a uri", "::: not a uri"},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := readError(t, h, tt.uri)
			if e.Code != mcp.RESOURCE_NOT_FOUND || !strings.Contains(e.Message, "resource not found") {
				t.Fatalf("error %+v, want %d resource not found", e, mcp.RESOURCE_NOT_FOUND)
			}
		})
	}

	r := h.rpc("", "resources/list", map[string]any{"cursor": "not base64!"})
	if r.Error == nil || r.Error.Code != mcp.INVALID_PARAMS {
		t.Fatalf("bad cursor: %+v %s", r.Error, r.Result)
	}
}

// TestResourcesFollowCatalog checks the resources before the first import
// and across re-imports.
func TestResourcesFollowCatalog(t *testing.T) {
	h := newHarness(t)
	h.index.Store(nil)
	small := catalog.NewIndex(testOrigin, &catalog.Feed{
		School:  catalog.School{Name: "Small"},
		Courses: []catalog.Course{{Slug: "only-course", Title: "The Only Course"}},
	})
	steps := []struct {
		name       string
		index      *catalog.Index
		wantListed int
		readable   string // a URI that must read
		notLoaded  string // a URI that must fail because there is no catalog
		notFound   string // a URI that must fail as not found
	}{
		{name: "before import", index: nil, notLoaded: "school://courses/portrait-photography"},
		{name: "imported", index: demoIndex(t), wantListed: demoResources, readable: "school://courses/portrait-photography", notFound: "school://courses/only-course"},
		{name: "re-imported without it", index: small, wantListed: 1, readable: "school://courses/only-course", notFound: "school://courses/portrait-photography"},
		{name: "imported again", index: demoIndex(t), wantListed: demoResources, readable: "school://events/astro-night-camp", notFound: "school://courses/only-course"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			h.index.Store(st.index)
			if got, _ := listResources(t, h, ""); len(got) != st.wantListed {
				t.Fatalf("%d resources listed, want %d", len(got), st.wantListed)
			}
			if st.readable != "" {
				readResource(t, h, "", st.readable)
			}
			if st.notLoaded != "" {
				if e := readError(t, h, st.notLoaded); e.Code != mcp.INTERNAL_ERROR || !strings.Contains(e.Message, "not been loaded yet") {
					t.Fatalf("read before import: %+v", e)
				}
			}
			if st.notFound != "" {
				if e := readError(t, h, st.notFound); e.Code != mcp.RESOURCE_NOT_FOUND {
					t.Fatalf("read %s: %+v, want not found", st.notFound, e)
				}
			}
			r := h.rpc("", "resources/templates/list", map[string]any{})
			if n := strings.Count(string(r.Result), `"uriTemplate"`); n != 4 {
				t.Fatalf("%d templates listed: %s", n, r.Result)
			}
		})
	}
}

// TestListResourcesPaginates lists a catalog larger than a page in which a
// course and an event share every slug: mcp-go pages by name, and no item
// may be lost or repeated at a page boundary.
func TestListResourcesPaginates(t *testing.T) {
	const n = 130
	f := &catalog.Feed{School: catalog.School{Name: "Big"}}
	for i := range n {
		slug := fmt.Sprintf("item-%03d", i)
		f.Courses = append(f.Courses, catalog.Course{Slug: slug, Title: "Course " + slug})
		f.Events = append(f.Events, catalog.Event{Slug: slug, Title: "Event " + slug, StartsAt: "2027-01-01T10:00:00Z"})
	}
	h := newHarness(t)
	h.index.Store(catalog.NewIndex(testOrigin, f))
	got, pages := listResources(t, h, "")
	if len(pages) != 3 || pages[0] != listPageSize || pages[1] != listPageSize {
		t.Fatalf("page sizes %v, want %d per page", pages, listPageSize)
	}
	seen := map[string]bool{}
	for _, r := range got {
		if seen[r.URI] {
			t.Fatalf("%s listed twice", r.URI)
		}
		seen[r.URI] = true
	}
	for i := range n {
		for _, kind := range []string{"courses", "events"} {
			if uri := fmt.Sprintf("school://%s/item-%03d", kind, i); !seen[uri] {
				t.Fatalf("%s not listed", uri)
			}
		}
	}
	if len(got) != 2*n {
		t.Fatalf("%d resources, want %d", len(got), 2*n)
	}
	// The page limit is shared with tools/list, which must still fit on one.
	r := h.rpc("member", "tools/list", map[string]any{})
	if strings.Contains(string(r.Result), "nextCursor") {
		t.Fatalf("tools/list is paged: %s", r.Result)
	}
}

// TestResourcesStockGoClient reads the resources anonymously with mcp-go's
// own client, in the modern and the legacy protocol, which differ in the
// code of a resource-not-found error.
func TestResourcesStockGoClient(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name         string
		clientOpts   []client.ClientOption
		wantNotFound error
	}{
		{"modern", nil, mcp.ErrInvalidParams},
		{"legacy", []client.ClientOption{client.WithProtocolVersion(testVersion)}, mcp.ErrResourceNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			trans, err := transport.NewStreamableHTTP(h.srv.URL+"/mcp", transport.WithHTTPTimeout(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			c := client.NewClient(trans, tt.clientOpts...)
			defer c.Close()
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "stock-go-client", Version: "1"}}})
			if err != nil || init.Capabilities.Resources == nil {
				t.Fatalf("initialize: %v %+v", err, init)
			}

			list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			if err != nil || len(list.Resources) != demoResources {
				t.Fatalf("list: %v %+v", err, list)
			}
			templates, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
			if err != nil || len(templates.ResourceTemplates) != 4 {
				t.Fatalf("templates: %v %+v", err, templates)
			}
			uri := templates.ResourceTemplates[0].URITemplate.Raw()
			uri = strings.Replace(uri, "{slug}", "food-photography", 1)
			read, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
			if err != nil || len(read.Contents) != 1 {
				t.Fatalf("read %s: %v %+v", uri, err, read)
			}
			text, ok := read.Contents[0].(mcp.TextResourceContents)
			tool, terr := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: toolGetCourse, Arguments: map[string]any{"slug": "food-photography"}}})
			if !ok || terr != nil || text.MIMEType != "application/json" || text.Text != tool.Content[0].(mcp.TextContent).Text {
				t.Fatalf("read %s: %+v, get_course: %v %+v", uri, read.Contents[0], terr, tool)
			}

			_, err = c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "school://courses/nope"}})
			if !errors.Is(err, tt.wantNotFound) {
				t.Fatalf("unknown slug: %v, want %v", err, tt.wantNotFound)
			}
		})
	}
}

// TestResourcesConcurrentReimport reads an item that every catalog has
// while catalogs are swapped: re-syncing mcp-go's registry under
// concurrent reads must never make it look missing, nor race (go test
// -race).
func TestResourcesConcurrentReimport(t *testing.T) {
	h := newHarness(t)
	a, b := demoIndex(t), demoIndex(t)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"school://courses/portrait-photography"}}`)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := postRead(h.srv.Client(), h.srv.URL+"/mcp", body); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	// The readers' own requests re-sync the registry, each time the catalog
	// was swapped since the last one.
	for i := range 500 {
		h.index.Store([]*catalog.Index{a, b}[i%2])
		time.Sleep(100 * time.Microsecond)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// postRead sends a resources/read and reports a reply without contents.
// It is safe in goroutines: it does not touch a testing.T.
func postRead(c *http.Client, url string, body []byte) error {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", testVersion)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Result *readContents `json:"result"`
		Error  *rpcError     `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return err
	}
	if r.Error != nil || r.Result == nil || len(r.Result.Contents) != 1 {
		return fmt.Errorf("read during re-import: %+v", r.Error)
	}
	return nil
}

func TestGuardResource(t *testing.T) {
	logs := &logSink{}
	s, err := newMCPServer(Options{Origin: testOrigin, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	read := s.guardResource(func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		panic("boom")
	})
	_, err = read(context.Background(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "school://courses/x"}})
	if err == nil || !strings.Contains(err.Error(), "school://courses/x") || !strings.Contains(logs.String(), "boom") {
		t.Fatalf("panic not turned into a logged error: %v, log %q", err, logs)
	}
}
