package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/policy"
)

// Tool names are a contract with clients and the documents; do not rename.
const (
	toolSearchCatalog       = "search_catalog"
	toolGetCourse           = "get_course"
	toolListEvents          = "list_events"
	toolListMembershipPlans = "list_membership_plans"
	toolMyEnrollments       = "my_enrollments"
	toolAccountQuery        = "account_query"
)

// tool is one MCP tool: its declaration and its handler, paired here so
// that no list position pairs them. Exactly one handler is set: public
// for a tool anyone may call, member for one that needs a signed-in
// member, which anonymous callers do not see listed and which answers
// them with sign-in directions (memberOnly).
type tool struct {
	def toolDef
	// brief is what the instructions say of the tool after its name: a
	// verb phrase for a public tool ("finds courses"), the words in
	// parentheses for a member tool.
	brief string
	// scopes are what every call of a member tool needs of the member's
	// token. The tool's description, the challenge a call without them
	// gets (stepup.go) and the documents all say them from here.
	scopes []string
	// callScopes, when set, are what one call needs given its raw
	// arguments: scopes, and more for some arguments (a mutation through
	// account_query also needs account:write). Arguments it cannot read
	// need scopes; the handler refuses them itself.
	callScopes func(args json.RawMessage) []string
	public     func(*mcpServer, context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)
	member     func(*mcpServer, context.Context, *policy.Token, mcp.CallToolRequest) (*mcp.CallToolResult, error)
}

// accountRead is what the member tools need: the Account API's own scope.
// Shared, never modified.
var accountRead = []string{"account:read"}

// toolTable is every tool, in the order the instructions and the
// documents give them (tools/list sorts them by name).
var toolTable = [...]tool{
	{def: searchCatalogTool, brief: "finds courses, events, membership plans and digital products",
		public: (*mcpServer).searchCatalog},
	{def: getCourseTool, brief: "returns one course in full", public: (*mcpServer).getCourse},
	{def: listEventsTool, brief: "lists dated events such as workshops and webinars", public: (*mcpServer).listEvents},
	{def: listPlansTool, brief: "lists the subscription plans", public: (*mcpServer).listPlans},
	{def: myEnrollmentsTool, brief: "the signed-in member's courses, access and progress",
		scopes: accountRead, member: (*mcpServer).myEnrollments},
	{def: accountQueryTool, brief: "read-only GraphQL against the member's own Account API",
		scopes: accountRead, callScopes: accountQueryScopes, member: (*mcpServer).accountQuery},
}

func (s *mcpServer) addTools(core *server.MCPServer) {
	declared := declaredTools()
	for i := range toolTable {
		core.AddTool(declared[i], toolTable[i].handler(s))
	}
}

// handler is the tool's handler serving s.
func (t *tool) handler(s *mcpServer) server.ToolHandlerFunc {
	if t.member != nil {
		return s.memberOnly(t, func(ctx context.Context, id *policy.Token, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return t.member(s, ctx, id, req)
		})
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return t.public(s, ctx, req)
	}
}

// toolNamed returns the tool of that name, or nil.
func toolNamed(name string) *tool {
	for i := range toolTable {
		if toolTable[i].def.name == name {
			return &toolTable[i]
		}
	}
	return nil
}

// isMemberTool reports whether the tool of that name needs a member.
func isMemberTool(name string) bool {
	t := toolNamed(name)
	return t != nil && t.member != nil
}

// scopesFor are the scopes a call of the tool with these raw arguments
// needs: none for a public tool.
func (t *tool) scopesFor(args json.RawMessage) []string {
	if t.callScopes != nil {
		return t.callScopes(args)
	}
	return t.scopes
}

// ToolInfo is a tool as the documents list it.
type ToolInfo struct {
	Name, Title string
	// Member tools need a signed-in member; the others are public.
	Member bool
	// Scopes are what every call of a member tool needs of the token.
	Scopes []string
}

// Tools are the MCP server's tools, in the order the documents give them.
func Tools() []ToolInfo {
	out := make([]ToolInfo, len(toolTable))
	for i, t := range toolTable {
		out[i] = ToolInfo{Name: t.def.name, Title: t.def.title, Member: t.member != nil, Scopes: slices.Clone(t.scopes)}
	}
	return out
}

// declaredTools are the tools' declarations, in toolTable's order, built
// once for the process: they are the same for every school, and a
// thousand schools would otherwise each keep a copy of the schemas. They
// are shared and never written.
var declaredTools = sync.OnceValue(func() []mcp.Tool {
	out := make([]mcp.Tool, len(toolTable))
	for i := range toolTable {
		out[i] = toolTable[i].declaration()
	}
	return out
})

// declaration is the tool as tools/list gives it: a member tool's
// description ends with the scopes it needs, so an agent that holds a
// token without them knows what to ask for before it calls.
func (t *tool) declaration() mcp.Tool {
	d := t.def
	if t.member != nil {
		d.description += " Needs a member sign-in with scope " + strings.Join(t.scopes, " ") + "."
	}
	return d.tool()
}

// hideMemberTools removes the member tools from an anonymous tools/list.
// It is a list hook rather than mcp-go's WithToolFilter because a filter
// also rejects tools/call with a protocol error ("tool not found"), while
// an anonymous call of a member tool should get a tool result that tells
// the agent how to sign in.
func hideMemberTools(ctx context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
	if res == nil || IdentityFrom(ctx) != nil {
		return
	}
	visible := make([]mcp.Tool, 0, len(res.Tools))
	for _, t := range res.Tools {
		if !isMemberTool(t.Name) {
			visible = append(visible, t)
		}
	}
	res.Tools = visible
}

// memberOnly answers an anonymous call with sign-in directions. A token
// without the tool's scopes is answered at the edge with the challenge
// (stepup.go) and never gets here; the check below stays so that the
// handler holds its rule whatever reaches it.
func (s *mcpServer) memberOnly(t *tool, next func(context.Context, *policy.Token, mcp.CallToolRequest) (*mcp.CallToolResult, error)) server.ToolHandlerFunc {
	name := t.def.name
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := IdentityFrom(ctx)
		if id == nil {
			return mcp.NewToolResultError(s.signInNeeded(name)), nil
		}
		for _, scope := range t.scopes {
			if !id.HasScope(scope) {
				want := strings.Join(t.scopes, " ")
				return mcp.NewToolResultError(fmt.Sprintf("%s needs the scope %s, which this access token was not granted; sign in again requesting scope %q.", name, want, want)), nil
			}
		}
		if s.opts.Account == nil {
			return mcp.NewToolResultError("The member Account API is not configured on this gateway."), nil
		}
		return next(ctx, id, req)
	}
}

// guard makes every failure a tool error: a handler error or panic must
// reach the agent as a result it can read and act on, never as a broken
// transport or a dead connection.
func (s *mcpServer) guard(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				s.opts.Logger.Error("mcp: tool panicked", "tool", req.Params.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				res, err = mcp.NewToolResultError(fmt.Sprintf("%s failed with an internal error; the gateway logged it.", req.Params.Name)), nil
			}
		}()
		res, err = next(ctx, req)
		if err != nil {
			s.opts.Logger.Error("mcp: tool failed", "tool", req.Params.Name, "error", err)
			spanRefused(ctx, "tool_error")
			return mcp.NewToolResultError(fmt.Sprintf("%s failed: %v", req.Params.Name, err)), nil
		}
		if res != nil && res.IsError {
			spanRefused(ctx, "tool_error")
		}
		return res, nil
	}
}

// catalogIndex returns the current catalog or the tool error to answer
// while there is none.
func (s *mcpServer) catalogIndex(ctx context.Context) (*catalog.Index, *mcp.CallToolResult) {
	if ix := s.opts.Catalog(ctx); ix != nil {
		return ix, nil
	}
	return nil, mcp.NewToolResultError(fmt.Sprintf("The catalog of %s has not been loaded yet; try again in a minute.", s.opts.SiteName))
}

// jsonResult returns v as JSON text, for every client, and as structured
// content, for clients that read the tool's output schema.
//
// The structured content is v itself, not its encoding: mcp-go encodes
// the result through a json.Marshaler, and encoding/json re-scans
// (compacts) every byte a Marshaler or a json.RawMessage yields, so
// handing it the text again as raw JSON costs a scan of the whole
// result on every call. The text is encoded straight into its string,
// one allocation instead of a buffer and a copy.
func jsonResult(v any) (*mcp.CallToolResult, error) {
	var text strings.Builder
	if err := json.NewEncoder(&text).Encode(v); err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(strings.TrimSuffix(text.String(), "\n"))},
		StructuredContent: v,
	}, nil
}

// toolDef declares a tool. Raw schemas are used instead of mcp-go's
// builders so that input and output schemas are exactly what is written
// here, additionalProperties included.
type toolDef struct {
	name, title, description string
	input, output            schema
	mayWrite                 bool
}

func (d toolDef) tool() mcp.Tool {
	t := mcp.Tool{
		Name:           d.name,
		Title:          d.title,
		Description:    d.description,
		RawInputSchema: mustJSON(d.input),
		// Every tool reads the catalog or the member's account and touches
		// nothing outside the school; only account_query can write, and
		// only for a member who granted account:write.
		Annotations: mcp.ToolAnnotation{
			Title:           d.title,
			ReadOnlyHint:    mcp.ToBoolPtr(!d.mayWrite),
			DestructiveHint: mcp.ToBoolPtr(d.mayWrite),
			IdempotentHint:  mcp.ToBoolPtr(!d.mayWrite),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		},
	}
	if d.output != nil {
		t.RawOutputSchema = mustJSON(d.output)
	}
	return t
}
