package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/schoolgate/schoolgate/policy"
)

// Step-up: a caller whose token lacks a scope that a member tool needs
// gets, for its tools/call, what the Account API answers the same token:
// 403 with the RFC 6750 challenge error="insufficient_scope", scope= every
// scope the call needs, and resource_metadata. A tool error in a 200
// would have a person read it and sign in again; the challenge lets an
// MCP client authorize again for the scopes it names, by itself (the MCP
// authorization's scope challenge handling). tools/list still lists the
// tools, whose descriptions name their scopes.
//
// The answer is decided before mcp-go dispatches, since the status goes
// out before any JSON-RPC answer, and only from the body the edge has
// already read (capped, and never a batch). Anything that is not a
// well-formed tools/call naming a member tool is left to mcp-go as
// before, and memberOnly keeps its own check behind this one.

// rpcCall is what the edge reads of a request: enough to tell a
// tools/call and the tool it names. It is read with encoding/json, as
// mcp-go reads the request it dispatches (key case and repeated keys
// alike), so both take the same tool from the same body.
type rpcCall struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Params  struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
}

// scopeChallenge returns the challenge for a tools/call in body that the
// caller's token may not make, or nil to let mcp-go serve the request.
// Anonymous requests are nil: a member tool answers them with sign-in
// directions, and the catalog tools need no token at all.
func scopeChallenge(ctx context.Context, body []byte, resourceMetadata string) *policy.Challenge {
	tok := callerFrom(ctx)
	if tok == nil {
		return nil
	}
	var call rpcCall
	if json.Unmarshal(body, &call) != nil || call.JSONRPC != "2.0" || call.Method != "tools/call" ||
		isNull(call.ID) || !isNull(call.Result) {
		// Malformed, a notification, or another method: mcp-go's to answer.
		return nil
	}
	t := toolNamed(call.Params.Name)
	if t == nil || t.member == nil {
		return nil
	}
	req := policy.Requirement{Audience: policy.AudienceMember, Scopes: t.scopesFor(call.Params.Arguments)}
	ch := policy.Authorize(tok, req)
	if ch != nil {
		ch.ResourceMetadata = resourceMetadata
	}
	return ch
}

// isNull reports an absent member or a JSON null: mcp-go reads both as
// no id (a notification) and no result.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}
