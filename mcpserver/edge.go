package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"go.opentelemetry.io/otel/trace"

	"github.com/schoolgate/schoolgate/policy"
)

// maxBodyBytes caps a JSON-RPC request. Tool arguments are a query or a
// slug; a megabyte is far more than any honest client sends, and mcp-go
// reads the whole body into memory.
const maxBodyBytes = 1 << 20

// CORS answers. Mcp-Method and Mcp-Name are required request headers from
// protocol version 2026-07-28 on, so browser clients of that version need
// them allowed too; so does DPoP, the proof a DPoP-bound token comes
// with, and DPoP-Nonce is exposed for a client to retry with. No
// Allow-Credentials: tokens are headers, and nothing at /mcp may be
// reachable with a browser's cookies.
const (
	corsAllowMethods  = "GET, POST, DELETE, OPTIONS"
	corsAllowHeaders  = "Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name, DPoP"
	corsExposeHeaders = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, DPoP-Nonce"
	corsMaxAge        = "7200" // Chromium's ceiling
	allowedMethods    = "POST, OPTIONS"
)

// edge is the HTTP layer in front of mcp-go: DNS-rebinding protection,
// CORS, the body cap, the methods a stateless server answers, and the
// scope challenge of a member tool's call (stepup.go).
type edge struct {
	site siteOrigin
	// resourceMetadata is the RFC 9728 document a challenge points to.
	resourceMetadata string
	// authorize makes the step-up challenge (Options.Authorize).
	authorize func(*policy.Token, policy.Requirement) *policy.Challenge
	next      http.Handler
}

func (e *edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Add("Vary", "Origin")
	origin, hasOrigin := r.Header.Get("Origin"), len(r.Header.Values("Origin")) > 0
	if hasOrigin && !e.site.allowOrigin(origin) {
		writeRPCError(w, http.StatusForbidden, codeInvalidRequest,
			fmt.Sprintf("Origin %q may not call this MCP server (DNS-rebinding protection); allowed are %s, https origins and loopback origins", clipString(origin), e.site.origin))
		return
	}
	if !e.site.allowHost(r.Host) {
		writeRPCError(w, http.StatusForbidden, codeInvalidRequest,
			fmt.Sprintf("Host %q is not this site (%s)", clipString(r.Host), e.site.origin))
		return
	}
	if hasOrigin {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
	}

	switch r.Method {
	case http.MethodPost:
		raw, err := capBody(w, r)
		if err != nil {
			writeRPCError(w, http.StatusRequestEntityTooLarge, codeInvalidRequest, err.Error())
			return
		}
		if isBatch(raw) {
			writeRPCError(w, http.StatusBadRequest, codeInvalidRequest,
				"JSON-RPC batches are not part of the MCP protocol; send one message per request")
			return
		}
		if trace.SpanFromContext(r.Context()).SpanContext().IsValid() {
			var span trace.Span
			r, span = startCallSpan(r, raw)
			defer span.End()
		}
		if ch := scopeChallenge(r.Context(), raw, e.resourceMetadata, e.authorize); ch != nil {
			spanRefused(r.Context(), ch.Error)
			ch.Write(w)
			return
		}
		e.next.ServeHTTP(w, r)
	case http.MethodOptions:
		if hasOrigin {
			h.Set("Access-Control-Allow-Methods", corsAllowMethods)
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", corsMaxAge)
		}
		h.Set("Allow", allowedMethods)
		w.WriteHeader(http.StatusNoContent)
	default:
		// A stateless server has no stream to offer on GET and no session
		// to end on DELETE. Stock clients (the TypeScript SDK's
		// StreamableHTTPClientTransport among them) treat 405 on GET as
		// "no server-initiated stream" and carry on over POST.
		h.Set("Allow", allowedMethods)
		writeRPCError(w, http.StatusMethodNotAllowed, codeInvalidRequest,
			r.Method+" is not supported: this MCP server is stateless, send JSON-RPC messages with POST")
	}
}

var errBodyTooLarge = fmt.Errorf("request body is larger than %d bytes", maxBodyBytes)

// capBody reads the body up to the cap and puts it back for mcp-go.
func capBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > maxBodyBytes {
		return nil, errBodyTooLarge
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, errBodyTooLarge
	}
	// Other read errors (a client that hung up) are left for mcp-go to
	// report as it does for any unreadable body.
	r.Body = io.NopCloser(bytes.NewReader(raw))
	return raw, nil
}

// isBatch reports a well-formed JSON array: a JSON-RPC batch, which the
// current protocol dropped. It is valid JSON, so it is an invalid request
// (-32600), not a parse error (-32700) as mcp-go would answer.
func isBatch(raw []byte) bool {
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '[' && json.Valid(trimmed)
}

// JSON-RPC error codes used at the edge.
const codeInvalidRequest = -32600

// writeRPCError answers with a JSON-RPC error object, the shape every MCP
// client can show, even for failures outside JSON-RPC proper.
func writeRPCError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
	})
}

// clipString keeps attacker-sized header values out of responses and logs.
func clipString(s string) string {
	const n = 100
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// CodeBusy is the JSON-RPC error of a call the gateway does not serve now
// because the school is busy (its budget spent, or its turn on the
// instance not come); a server error of the range JSON-RPC leaves to
// implementations.
const CodeBusy = -32000

// WriteBusy answers such a call with status (429 or 503) and a JSON-RPC
// error; the caller sets Retry-After.
func WriteBusy(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	writeRPCError(w, status, CodeBusy, msg)
}
