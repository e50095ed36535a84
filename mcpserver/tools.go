package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
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

// memberTools need a signed-in member.
var memberTools = map[string]bool{toolMyEnrollments: true, toolAccountQuery: true}

func (s *mcpServer) addTools(core *server.MCPServer) {
	t := declaredTools()
	core.AddTool(t[0], s.searchCatalog)
	core.AddTool(t[1], s.getCourse)
	core.AddTool(t[2], s.listEvents)
	core.AddTool(t[3], s.listPlans)
	core.AddTool(t[4], s.memberOnly(toolMyEnrollments, s.myEnrollments))
	core.AddTool(t[5], s.memberOnly(toolAccountQuery, s.accountQuery))
}

// declaredTools are the tools' declarations, in addTools' order, built
// once for the process: they are the same for every school, and a
// thousand schools would otherwise each keep a copy of the schemas. They
// are shared and never written.
var declaredTools = sync.OnceValue(func() []mcp.Tool {
	defs := []toolDef{searchCatalogTool, getCourseTool, listEventsTool, listPlansTool, myEnrollmentsTool, accountQueryTool}
	out := make([]mcp.Tool, len(defs))
	for i, d := range defs {
		out[i] = d.tool()
	}
	return out
})

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
		if !memberTools[t.Name] {
			visible = append(visible, t)
		}
	}
	res.Tools = visible
}

// memberOnly answers an anonymous call with sign-in directions, and a call
// without account:read the way the Account API itself would refuse it.
func (s *mcpServer) memberOnly(name string, next func(context.Context, *policy.Token, mcp.CallToolRequest) (*mcp.CallToolResult, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := IdentityFrom(ctx)
		if id == nil {
			return mcp.NewToolResultError(s.signInNeeded(name)), nil
		}
		if !id.HasScope("account:read") {
			return mcp.NewToolResultError(fmt.Sprintf("%s needs the account:read scope, which this access token was not granted; sign in again requesting scope account:read.", name)), nil
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
			return mcp.NewToolResultError(fmt.Sprintf("%s failed: %v", req.Params.Name, err)), nil
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
