package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/vektah/gqlparser/v2/ast"
)

var accountQueryTool = toolDef{
	name:  toolAccountQuery,
	title: "Query my account",
	description: "Run a GraphQL query against the signed-in member's own Account API at this school and return the raw GraphQL response ({\"data\": ..., \"errors\": [...]}). " +
		"The root field viewer is the member: viewer { id email enrolledCourses(first: 20) { nodes { slug expireDate hasLifetimeAccess lastWatchedLecture { lectureId positionSeconds } } } }; the API also covers the member's orders and event registrations. " +
		"Queries only: mutations are refused unless the member granted the account:write scope, subscriptions always. Send exactly one operation; pass values through variables rather than string concatenation. " +
		"For enrollments, my_enrollments is simpler.",
	input: closedObject(schema{
		"query": str("One GraphQL operation, e.g. \"query($n: Int) { viewer { email enrolledCourses(first: $n) { nodes { slug } } } }\"."),
		"variables": schema{"type": "object", "additionalProperties": true,
			"description": "Values for the operation's variables, e.g. {\"n\": 5}."},
	}, "query"),
	// A member with account:write can run mutations, so clients should
	// confirm calls as for any tool that may change data.
	mayWrite: true,
}

type accountQueryArgs struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables"`
}

// accountWrite is what a mutation needs: every scope, not only the one
// a reader lacks, so that one challenge names the whole call. Shared,
// never modified.
var accountWrite = []string{"account:read", "account:write"}

// accountQueryScopes are the scopes one account_query call needs: a
// mutation also needs account:write. Arguments that are not a readable
// operation need account:read only; the handler refuses them with a tool
// error that says what to fix.
func accountQueryScopes(args json.RawMessage) []string {
	var in struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(args, &in) != nil || in.Query == "" {
		return accountRead
	}
	if op, err := operationOf(in.Query); err == nil && op == ast.Mutation {
		return accountWrite
	}
	return accountRead
}

func (s *mcpServer) accountQuery(ctx context.Context, id *policy.Token, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in accountQueryArgs
	if err := bindArgs(req, &in); err != nil {
		return argError("%v", err), nil
	}
	if in.Query == "" {
		return argError("query is required"), nil
	}
	op, err := operationOf(in.Query)
	if err != nil {
		return argError("%v", err), nil
	}
	switch {
	case op == ast.Subscription:
		return mcp.NewToolResultError("Subscriptions are not supported; use a query."), nil
	case op == ast.Mutation && !id.HasScope("account:write"):
		// Every scope the call needs, not only the missing one: a client
		// that signs in again for account:write alone loses account:read,
		// which every member tool needs.
		return mcp.NewToolResultError("Mutations need the scopes account:read and account:write; this access token was not granted account:write. Use a query, or sign in again requesting scope \"account:read account:write\" with the other scopes you use."), nil
	case op != ast.Query && op != ast.Mutation:
		return argError("unknown operation type %q", op), nil
	}
	raw, err := s.opts.Account(ctx, id, in.Query, in.Variables)
	if err != nil {
		s.opts.Logger.Warn("mcp: account_query: the Account API failed", "subject", id.Subject, "error", err)
		return mcp.NewToolResultError(fmt.Sprintf("The school's Account API failed: %v", err)), nil
	}
	return graphQLResult(raw), nil
}

// graphQLResult passes the upstream answer through. A response with errors
// and no data is a failed call; partial data with errors is a result the
// agent can use, with the errors in it.
func graphQLResult(raw json.RawMessage) *mcp.CallToolResult {
	var probe struct {
		Data   json.RawMessage   `json:"data"`
		Errors []json.RawMessage `json:"errors"`
	}
	isObject := json.Unmarshal(raw, &probe) == nil && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{"))
	text := string(raw)
	if len(bytes.TrimSpace(raw)) == 0 {
		text = "The school's Account API returned an empty response."
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}}
	if isObject {
		res.StructuredContent = raw
	}
	noData := len(probe.Data) == 0 || string(probe.Data) == "null"
	res.IsError = !isObject || len(probe.Errors) > 0 && noData
	return res
}
