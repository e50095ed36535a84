package mcpserver

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestInitialize(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name, asked, want string
	}{
		{"current", "2025-11-25", "2025-11-25"},
		{"2025-06-18", "2025-06-18", "2025-06-18"},
		{"2025-03-26", "2025-03-26", "2025-03-26"},
		{"2024-11-05", "2024-11-05", "2024-11-05"},
		{"unknown future version negotiates down", "2099-01-01", "2025-11-25"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
				"protocolVersion": tt.asked, "capabilities": map[string]any{},
				"clientInfo": map[string]any{"name": "test", "version": "1"}}})
			resp := h.as(t).post("", string(body), map[string]string{"Mcp-Protocol-Version": ""})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
				t.Fatalf("a stateless server must not hand out a session id, got %q", sid)
			}
			r := readReply(t, resp)
			var res struct {
				ProtocolVersion string `json:"protocolVersion"`
				Instructions    string `json:"instructions"`
				ServerInfo      struct {
					Name, Title, Version string
				} `json:"serverInfo"`
				Capabilities map[string]json.RawMessage `json:"capabilities"`
			}
			if err := json.Unmarshal(r.Result, &res); err != nil || r.Error != nil {
				t.Fatalf("initialize: %v %+v", err, r.Error)
			}
			if res.ProtocolVersion != tt.want {
				t.Fatalf("protocolVersion %q, want %q", res.ProtocolVersion, tt.want)
			}
			for _, want := range []string{testSchool, testOrigin, testMetadata, "account:read", "my_enrollments", "account_query", "search_catalog", "Authorization: Bearer"} {
				if !strings.Contains(res.Instructions, want) {
					t.Errorf("instructions do not mention %q:\n%s", want, res.Instructions)
				}
			}
			if res.ServerInfo.Name != serverName || res.ServerInfo.Title != testSchool {
				t.Errorf("serverInfo %+v", res.ServerInfo)
			}
			if _, ok := res.Capabilities["tools"]; !ok {
				t.Error("tools capability missing")
			}
		})
	}
}

// TestStatelessAcrossInstances sends initialize to one instance and the
// following calls to another, as a load balancer may.
func TestStatelessAcrossInstances(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	a.rpc("", "initialize", map[string]any{"protocolVersion": testVersion, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	resp := b.post("", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized notification: %d", resp.StatusCode)
	}
	var out searchResult
	b.okTool("", toolSearchCatalog, map[string]any{"query": "portrait"}, &out)
	if out.Count == 0 {
		t.Fatal("no results")
	}
}

func TestDiscoverModernProtocol(t *testing.T) {
	h := newHarness(t)
	const modern = "2026-07-28"
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    modern,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "t", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": map[string]any{"_meta": meta}})
	resp := h.post("", string(body), map[string]string{"Mcp-Protocol-Version": modern, "Mcp-Method": "server/discover"})
	r := readReply(t, resp)
	var res struct {
		SupportedVersions []string `json:"supportedVersions"`
		Instructions      string   `json:"instructions"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || r.Error != nil {
		t.Fatalf("discover: %v %+v", err, r.Error)
	}
	if !slices.Contains(res.SupportedVersions, modern) || !slices.Contains(res.SupportedVersions, testVersion) {
		t.Fatalf("supported versions %v", res.SupportedVersions)
	}
	if !strings.Contains(res.Instructions, testMetadata) {
		t.Fatal("discover must carry the instructions")
	}

	body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{
		"_meta": meta, "name": toolMyEnrollments, "arguments": map[string]any{}}})
	resp = h.post("member", string(body), map[string]string{"Mcp-Protocol-Version": modern, "Mcp-Method": "tools/call", "Mcp-Name": toolMyEnrollments})
	r = readReply(t, resp)
	if r.Error != nil || !strings.Contains(string(r.Result), "portrait-photography") {
		t.Fatalf("modern member call: %+v %s", r.Error, r.Result)
	}
}

func toolNames(t *testing.T, h *harness, token string) []string {
	t.Helper()
	r := h.rpc(token, "tools/list", map[string]any{})
	var res struct {
		Tools []struct {
			Name        string                     `json:"name"`
			Description string                     `json:"description"`
			InputSchema map[string]json.RawMessage `json:"inputSchema"`
			Annotations struct {
				ReadOnlyHint  *bool `json:"readOnlyHint"`
				OpenWorldHint *bool `json:"openWorldHint"`
			} `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || r.Error != nil {
		t.Fatalf("tools/list: %v %+v", err, r.Error)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if len(tool.Description) < 80 || tool.InputSchema["type"] == nil {
			t.Errorf("%s: description or input schema missing", tool.Name)
		}
		if tool.Annotations.OpenWorldHint == nil || *tool.Annotations.OpenWorldHint {
			t.Errorf("%s: openWorldHint must be false", tool.Name)
		}
		readOnly := tool.Annotations.ReadOnlyHint != nil && *tool.Annotations.ReadOnlyHint
		if readOnly != (tool.Name != toolAccountQuery) {
			t.Errorf("%s: readOnlyHint %v", tool.Name, readOnly)
		}
	}
	return names
}

func TestToolsListDependsOnIdentity(t *testing.T) {
	h := newHarness(t)
	public := []string{toolGetCourse, toolListEvents, toolListMembershipPlans, toolSearchCatalog}
	member := []string{toolAccountQuery, toolGetCourse, toolListEvents, toolListMembershipPlans, toolMyEnrollments, toolSearchCatalog}
	tests := []struct {
		name, token string
		want        []string
	}{
		{"anonymous", "", public},
		{"member", "member", member},
		{"member without account:read still sees them", "noread", member},
		{"operator, who acts for no member", "operator", public},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := toolNames(t, h.as(t), tt.token); !slices.Equal(got, tt.want) {
				t.Fatalf("tools %v, want %v", got, tt.want)
			}
		})
	}
}

func TestUnknownToolIsProtocolError(t *testing.T) {
	h := newHarness(t)
	r := h.rpc("", "tools/call", map[string]any{"name": "drop_tables", "arguments": map[string]any{}})
	if r.Error == nil {
		t.Fatal("an unknown tool is a protocol error, not a result")
	}
}
