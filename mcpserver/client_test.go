package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/schoolgate/schoolgate/catalog"
)

// TestStockGoClient drives the server with mcp-go's own client, in the
// modern (server/discover) and the legacy (initialize) protocol, as an
// anonymous visitor and as a member.
func TestStockGoClient(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name        string
		token       string
		clientOpts  []client.ClientOption
		transOpts   []transport.StreamableHTTPCOption
		wantVersion string
		wantTools   int
	}{
		{"modern anonymous", "", nil, nil, mcp.LATEST_PROTOCOL_VERSION, 4},
		{"modern member", "member", nil, nil, mcp.LATEST_PROTOCOL_VERSION, 6},
		{"legacy anonymous", "", []client.ClientOption{client.WithProtocolVersion(testVersion)}, nil, testVersion, 4},
		{"legacy member, listening for server messages", "member",
			[]client.ClientOption{client.WithProtocolVersion(testVersion)},
			[]transport.StreamableHTTPCOption{transport.WithContinuousListening()}, testVersion, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			opts := append([]transport.StreamableHTTPCOption{transport.WithHTTPTimeout(10 * time.Second)}, tt.transOpts...)
			if tt.token != "" {
				opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tt.token}))
			}
			trans, err := transport.NewStreamableHTTP(h.srv.URL+"/mcp", opts...)
			if err != nil {
				t.Fatal(err)
			}
			c := client.NewClient(trans, tt.clientOpts...)
			defer c.Close()
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
				ClientInfo: mcp.Implementation{Name: "stock-go-client", Version: "1"},
			}})
			if err != nil {
				t.Fatalf("initialize: %v", err)
			}
			if c.ProtocolVersion() != tt.wantVersion {
				t.Fatalf("negotiated %q, want %q", c.ProtocolVersion(), tt.wantVersion)
			}
			if !strings.Contains(init.Instructions, testMetadata) {
				t.Fatalf("instructions: %q", init.Instructions)
			}

			tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if len(tools.Tools) != tt.wantTools {
				t.Fatalf("%d tools, want %d", len(tools.Tools), tt.wantTools)
			}

			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
				Name: toolSearchCatalog, Arguments: map[string]any{"query": "landscape", "limit": 3},
			}})
			if err != nil || res.IsError {
				t.Fatalf("search_catalog: %v %+v", err, res)
			}
			var out searchResult
			if err := json.Unmarshal(res.RawStructuredContent, &out); err != nil || out.Count == 0 || out.Results[0].Slug != "landscape-photography" {
				t.Fatalf("structured content %s: %v", res.RawStructuredContent, err)
			}

			res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: toolMyEnrollments}})
			if err != nil {
				t.Fatalf("my_enrollments must answer with a result, not %v", err)
			}
			if res.IsError != (tt.token == "") {
				t.Fatalf("my_enrollments isError %v for token %q: %+v", res.IsError, tt.token, res.Content)
			}

			res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: toolGetCourse, Arguments: map[string]any{"slug": "nope"}}})
			if err != nil || !res.IsError {
				t.Fatalf("unknown course: %v %+v", err, res)
			}
		})
	}
}

// TestOutputSchemasHold runs every public tool with mcp-go's output schema
// validation switched on, proving the declared schemas describe the
// results (clients such as the TypeScript SDK validate against them).
func TestOutputSchemasHold(t *testing.T) {
	var defs []toolDef
	for _, tl := range toolTable {
		if tl.public != nil {
			defs = append(defs, tl.def)
		}
	}
	calls := map[string][]map[string]any{
		toolSearchCatalog:       {{"query": "portrait"}, {"query": ""}, {"query": "x", "kind": "plan"}},
		toolGetCourse:           {{"slug": "photography-fundamentals"}, {"slug": "smartphone-photography"}},
		toolListEvents:          {{}, {"from": "2027-01-01", "to": "2027-12-31"}},
		toolListMembershipPlans: {{}},
	}
	empty, err := catalog.Parse([]byte(`{"school":{"name":"Empty"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var handlers map[string]func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)
	for _, ix := range []*catalog.Index{demoIndex(t), catalog.NewIndex(testOrigin, empty)} {
		s, err := newMCPServer(Options{SiteName: testSchool, Origin: testOrigin, Catalog: func(context.Context) *catalog.Index { return ix }})
		if err != nil {
			t.Fatal(err)
		}
		handlers = map[string]func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error){}
		for i := range toolTable {
			handlers[toolTable[i].def.name] = toolTable[i].handler(s)
		}
		core := newValidatingServer(t, defs, handlers)
		for _, d := range defs {
			for _, args := range calls[d.name] {
				if d.name == toolGetCourse && ix.Feed().School.Name == "Empty" {
					continue
				}
				body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": d.name, "arguments": args}})
				b, _ := json.Marshal(core.HandleMessage(context.Background(), body))
				if strings.Contains(string(b), `"isError":true`) || !strings.Contains(string(b), "structuredContent") {
					t.Errorf("%s(%v) on %s does not satisfy its output schema: %s", d.name, args, ix.Feed().School.Name, b)
				}
			}
		}
	}
	for _, d := range defs {
		if d.output == nil {
			t.Errorf("%s declares no output schema", d.name)
		}
		if len(calls[d.name]) == 0 {
			t.Errorf("%s has no calls to check its output schema with", d.name)
		}
	}

	// The check above must be able to fail: a result missing a required
	// field is turned into an error by the validator.
	broken := searchCatalogTool
	broken.output = object(schema{"nope": str("")}, "nope")
	core := newValidatingServer(t, []toolDef{broken}, handlers)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": broken.name, "arguments": map[string]any{"query": "x"}}})
	if b, _ := json.Marshal(core.HandleMessage(context.Background(), body)); !strings.Contains(string(b), `"isError":true`) {
		t.Fatalf("output validation did not run: %s", b)
	}
}
