package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/schoolgate/schoolgate/policy"
)

// callBody is a tools/call of name with args, as a client sends it.
func callBody(name string, args any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args}})
	return string(b)
}

const mutation = `mutation { cancelRegistration(id: "r1") { ok } }`

// A member tool called with a token that lacks a scope it needs is
// answered as the Account API answers that token: 403 with the Bearer
// challenge naming every scope the call needs and the resource metadata,
// and no JSON-RPC answer, so that a client can authorize again by itself.
func TestScopeChallenge(t *testing.T) {
	h := newHarness(t)
	challenge := func(desc, scope string) string {
		return `Bearer error="insufficient_scope", error_description="` + desc + `", scope="` + scope +
			`", resource_metadata="` + testMetadata + `"`
	}
	lacksRead := challenge("the access token lacks the scope account:read", "account:read")
	tests := []struct {
		name, token, body string
		want              string // the WWW-Authenticate value
	}{
		{"my_enrollments without account:read", "noread", callBody(toolMyEnrollments, map[string]any{}), lacksRead},
		{"no arguments at all", "noread", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"my_enrollments"}}`, lacksRead},
		{"account_query without account:read", "noread", callBody(toolAccountQuery, map[string]any{"query": "{ viewer { id } }"}), lacksRead},
		{"an unreadable query needs account:read", "noread", callBody(toolAccountQuery, map[string]any{"query": "{ viewer {"}), lacksRead},
		{"arguments of the wrong shape need account:read", "noread", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"account_query","arguments":"mutation { x }"}}`, lacksRead},
		{"a mutation without either scope names both", "noread", callBody(toolAccountQuery, map[string]any{"query": mutation}),
			challenge("the access token lacks the scope account:read", "account:read account:write")},
		{"a mutation with account:read only names both", "member", callBody(toolAccountQuery, map[string]any{"query": mutation}),
			challenge("the access token lacks the scope account:write", "account:read account:write")},
		{"a mutation after a fragment", "member", callBody(toolAccountQuery, map[string]any{"query": `fragment F on Viewer { id } mutation M { x { ...F } }`}),
			challenge("the access token lacks the scope account:write", "account:read account:write")},
		{"an operator token, as at the Account API", "operator", callBody(toolMyEnrollments, map[string]any{}),
			challenge("this operation needs a member token; this one was issued to a operator client", "account:read")},
		// mcp-go reads the body with encoding/json, whose keys match
		// case-insensitively and whose last repeated key wins; so does
		// the edge, and the two agree on the tool (TestChallengeReadsAsDispatched).
		{"keys in another case", "noread", `{"JSONRPC":"2.0","ID":1,"METHOD":"tools/call","PARAMS":{"NAME":"my_enrollments"}}`, lacksRead},
		{"a repeated name, the last one counts", "noread", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_catalog","name":"my_enrollments"}}`, lacksRead},
		{"a name spelled with an escape", "noread", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"my\u005fenrollments"}}`, lacksRead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.as(t).post(tt.token, tt.body, map[string]string{"Origin": testOrigin})
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("status %d, want 403: %s", resp.StatusCode, body)
			}
			if got := resp.Header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != tt.want {
				t.Fatalf("WWW-Authenticate %q\nwant %q", got, tt.want)
			}
			// Exactly what policy writes for the Account API: the same
			// JSON error body, uncached, readable by a browser client.
			var out map[string]string
			if err := json.Unmarshal(body, &out); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			ch, _ := policy.ParseChallenge(tt.want)
			if len(out) != 3 || out["error"] != "insufficient_scope" || out["scope"] != ch["scope"] || out["error_description"] != ch["error_description"] {
				t.Errorf("body %s, want the challenge's error, description and scope and nothing else (no JSON-RPC answer)", body)
			}
			if ct, cc := resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"); ct != "application/json" || cc != "no-store" {
				t.Errorf("Content-Type %q, Cache-Control %q", ct, cc)
			}
			if !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate") {
				t.Error("a browser client must be able to read the challenge")
			}
		})
	}
	if n := h.account.count(); n != 0 {
		t.Fatalf("challenged calls reached the Account API %d times", n)
	}
}

// What is not a member tool's call without its scopes is served as
// before: by the tool, by mcp-go's own answer to what it cannot read, or
// by the edge's batch refusal.
func TestScopeChallengeLeavesTheRest(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name, token, body string
		status            int
		want              string // in the body
	}{
		{"my_enrollments with account:read", "member", callBody(toolMyEnrollments, map[string]any{}), 200, "portrait-photography"},
		{"a query with account:read", "member", callBody(toolAccountQuery, map[string]any{"query": "{ viewer { id } }"}), 200, "m-1"},
		{"a mutation with account:write", "writer", callBody(toolAccountQuery, map[string]any{"query": mutation}), 200, "m-2"},
		{"an anonymous call gets sign-in directions", "", callBody(toolMyEnrollments, map[string]any{}), 200, "needs a signed-in member"},
		{"a public tool without account:read", "noread", callBody(toolSearchCatalog, map[string]any{"query": "portrait"}), 200, "portrait"},
		{"a public tool for an operator", "operator", callBody(toolGetCourse, map[string]any{"slug": "portrait-photography"}), 200, "Portrait"},
		{"tools/list without account:read", "noread", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 200, toolMyEnrollments},
		{"an unknown tool", "noread", callBody("drop_tables", map[string]any{}), 200, `"error"`},
		{"a notification is no call", "noread", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"my_enrollments"}}`, 202, ""},
		{"a null id is no call", "noread", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"my_enrollments"}}`, 202, ""},
		{"another JSON-RPC version", "noread", `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"my_enrollments"}}`, 200, "Invalid JSON-RPC version"},
		{"a name that is not a string", "noread", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}`, 200, `"error"`},
		{"not JSON", "noread", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"my_enrollments"`, 400, ""},
		{"a batch", "noread", "[" + callBody(toolMyEnrollments, map[string]any{}) + "]", 400, "batches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.as(t).post(tt.token, tt.body, nil)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || resp.Header.Get("WWW-Authenticate") != "" {
				t.Fatalf("status %d, WWW-Authenticate %q, want %d and none: %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tt.status, body)
			}
			if !strings.Contains(string(body), tt.want) {
				t.Fatalf("body %s, want %q in it", body, tt.want)
			}
		})
	}
}

// The edge and mcp-go read the same body as the same tool: what the edge
// would challenge for a token without account:read is what mcp-go runs
// for a token with it.
func TestChallengeReadsAsDispatched(t *testing.T) {
	h := newHarness(t)
	for _, body := range []string{
		`{"JSONRPC":"2.0","ID":1,"METHOD":"tools/call","PARAMS":{"NAME":"my_enrollments"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_catalog","name":"my_enrollments"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"my\u005fenrollments"}}`,
	} {
		if resp := h.post("noread", body, nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d without account:read, want 403", body, resp.StatusCode)
		}
		before := h.account.count()
		resp := h.post("member", body, nil)
		if r := readReply(t, resp); r.Error != nil || !strings.Contains(string(r.Result), "portrait-photography") || h.account.count() != before+1 {
			t.Errorf("%s: with account:read mcp-go ran another tool: %s %+v", body, r.Result, r.Error)
		}
	}
}

// tools/list keeps the member tools for a member token without their
// scope, each description naming the scope a call needs, so that a client
// can ask for it before it calls.
func TestToolDescriptionsNameTheirScopes(t *testing.T) {
	h := newHarness(t)
	var res struct {
		Tools []struct{ Name, Description string } `json:"tools"`
	}
	if err := json.Unmarshal(h.rpc("noread", "tools/list", map[string]any{}).Result, &res); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, tl := range res.Tools {
		named := strings.HasSuffix(tl.Description, " Needs a member sign-in with scope account:read.")
		if named != isMemberTool(tl.Name) {
			t.Errorf("%s: description %q", tl.Name, tl.Description)
		}
		if named {
			seen++
		}
	}
	if seen != 2 {
		t.Fatalf("%d member tools listed, want 2", seen)
	}
}

// Behind the edge, each member handler still refuses a token without its
// scopes: the challenge is the answer clients see, not the only guard.
func TestMemberHandlersHoldTheirScopes(t *testing.T) {
	s, err := newMCPServer(Options{Origin: testOrigin, Account: (&fakeAccount{}).call})
	if err != nil {
		t.Fatal(err)
	}
	call := func(token, name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}}
		res, err := toolNamed(name).handler(s)(WithIdentity(context.Background(), testTokens[token]), req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, c := range []struct {
		token, tool string
		args        map[string]any
		want        string
	}{
		{"noread", toolMyEnrollments, nil, `requesting scope "account:read"`},
		{"noread", toolAccountQuery, map[string]any{"query": "{ viewer { id } }"}, `requesting scope "account:read"`},
		{"member", toolAccountQuery, map[string]any{"query": mutation}, `requesting scope "account:read account:write"`},
		{"operator", toolMyEnrollments, nil, "needs a signed-in member"},
	} {
		res := call(c.token, c.tool, c.args)
		text := res.Content[0].(mcp.TextContent).Text
		if !res.IsError || !strings.Contains(text, c.want) {
			t.Errorf("%s as %s: %q, want a tool error with %q", c.tool, c.token, text, c.want)
		}
	}
}

// FuzzScopeChallenge: for any body, the edge challenges a token without
// account:read exactly when mcp-go, reading the same body with its own
// types, would dispatch a tools/call of a member tool.
func FuzzScopeChallenge(f *testing.F) {
	for _, seed := range []string{
		callBody(toolMyEnrollments, map[string]any{}),
		callBody(toolAccountQuery, map[string]any{"query": mutation}),
		callBody(toolSearchCatalog, map[string]any{"query": "x"}),
		`{"JSONRPC":"2.0","ID":1,"METHOD":"tools/call","PARAMS":{"NAME":"my_enrollments"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"my\u005fenrollments"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"my_enrollments"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","result":{},"params":{"name":"my_enrollments"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`[]`, ``, `null`,
	} {
		f.Add([]byte(seed))
	}
	ctx := WithIdentity(context.Background(), testTokens["noread"])
	f.Fuzz(func(t *testing.T, body []byte) {
		ch := scopeChallenge(ctx, body, testMetadata, policy.Authorize)
		if ch != nil && (ch.Status != http.StatusForbidden || ch.Error != "insufficient_scope" || ch.ResourceMetadata != testMetadata) {
			t.Fatalf("challenge %+v", ch)
		}
		if dispatched := dispatchesMemberTool(body); (ch != nil) != dispatched {
			t.Fatalf("%q: challenged %v, mcp-go dispatches a member tool %v", body, ch != nil, dispatched)
		}
	})
}

// dispatchesMemberTool reads body as mcp-go's HandleMessage does before it
// runs a tools/call: version 2.0, an id, no result, and the request
// decoded into its own CallToolRequest.
func dispatchesMemberTool(body []byte) bool {
	var base struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		ID      any    `json:"id,omitempty"`
		Result  any    `json:"result,omitempty"`
	}
	if json.Unmarshal(body, &base) != nil || base.JSONRPC != "2.0" || base.ID == nil || base.Result != nil || base.Method != "tools/call" {
		return false
	}
	var req mcp.CallToolRequest
	if json.Unmarshal(body, &req) != nil {
		return false
	}
	return isMemberTool(req.Params.Name)
}
