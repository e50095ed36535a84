package mcpserver

import (
	"bytes"
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
func scopeChallenge(ctx context.Context, body []byte, resourceMetadata string,
	authorize func(*policy.Token, policy.Requirement) *policy.Challenge) *policy.Challenge {
	tok := callerFrom(ctx)
	if tok == nil || !mayNameMemberTool(body) {
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
	ch := authorize(tok, req)
	if ch != nil {
		ch.ResourceMetadata = resourceMetadata
	}
	return ch
}

// memberToolNames are the member tools' names as they appear in a body.
var memberToolNames = func() [][]byte {
	var out [][]byte
	for i := range toolTable {
		if toolTable[i].member != nil {
			out = append(out, []byte(toolTable[i].def.name))
		}
	}
	return out
}()

// mayNameMemberTool reports whether body could name a member tool, so
// that the calls of the other tools, most of a member's, are not read
// twice. A JSON string without escapes is its own bytes: a body without
// a backslash names a member tool only if the name is in it.
func mayNameMemberTool(body []byte) bool {
	if bytes.IndexByte(body, '\\') >= 0 {
		return true
	}
	for _, name := range memberToolNames {
		if bytes.Contains(body, name) {
			return true
		}
	}
	return false
}

// isNull reports an absent member or a JSON null: mcp-go reads both as
// no id (a notification) and no result.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}
