package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/schoolgate/schoolgate/catalog"
)

// The MCP server's span (docs/mcp.md, "Traces"), following the
// OpenTelemetry semantic conventions for MCP: one server span per
// JSON-RPC message, named "{mcp.method.name} {target}" (the tool's name
// for tools/call, the prompt's for prompts/get, else the method alone),
// with mcp.method.name, jsonrpc.request.id, mcp.protocol.version and, for
// a tool, gen_ai.tool.name and gen_ai.operation.name. Its parent is the
// trace context the client sent in params._meta (traceparent,
// tracestate) when it sent a valid one, linked to Caddy's request span;
// otherwise Caddy's request span. Only when Caddy's tracing is on: the
// edge does not read the message for it otherwise. Never a tool's
// arguments, which may hold what a person asked.

// tracerName is the instrumentation scope of the gateway's spans.
const tracerName = "github.com/schoolgate/schoolgate"

// tracedCall is what the span reads of a message.
type tracedCall struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name            string `json:"name"`
		ProtocolVersion string `json:"protocolVersion"`
		Meta            struct {
			Traceparent string `json:"traceparent"`
			Tracestate  string `json:"tracestate"`
		} `json:"_meta"`
	} `json:"params"`
}

// startCallSpan starts the message's span; r carries it.
func startCallSpan(r *http.Request, body []byte) (*http.Request, trace.Span) {
	ambient := trace.SpanFromContext(r.Context())
	var call tracedCall
	_ = json.Unmarshal(body, &call) // a malformed message is still a span, named by what was read
	method := clipAttr(call.Method)
	if method == "" {
		method = "mcp"
	}
	name := method
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method),
		attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "http")}
	switch call.Method {
	case "tools/call":
		tool := clipAttr(call.Params.Name)
		name += " " + tool
		attrs = append(attrs, attribute.String("gen_ai.tool.name", tool), attribute.String("gen_ai.operation.name", "execute_tool"))
	case "prompts/get":
		name += " " + clipAttr(call.Params.Name)
	}
	if id := strings.Trim(string(call.ID), `"`); id != "" && id != "null" {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", clipAttr(id)))
	}
	version := r.Header.Get("Mcp-Protocol-Version")
	if version == "" {
		version = call.Params.ProtocolVersion
	}
	if version != "" {
		attrs = append(attrs, attribute.String("mcp.protocol.version", clipAttr(version)))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...)}
	ctx := r.Context()
	if m := call.Params.Meta; m.Traceparent != "" {
		carrier := propagation.MapCarrier{"traceparent": m.Traceparent, "tracestate": m.Tracestate}
		if sent := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier)); sent.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sent)
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: ambient.SpanContext()}))
		}
	}
	ctx, span := ambient.TracerProvider().Tracer(tracerName).Start(ctx, name, opts...)
	return r.WithContext(ctx), span
}

// spanRefused marks the message's span refused with the challenge's error.
func spanRefused(ctx context.Context, code string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("error.type", code))
		span.SetStatus(codes.Error, code)
	}
}

// clipAttr bounds what a client wrote before it becomes an attribute.
func clipAttr(v string) string {
	if len(v) > 128 {
		return v[:128]
	}
	return v
}

// searchTraced is the catalog search within a span "schoolgate catalog
// search" when ctx has one: the kind asked for and the hits' count,
// never the query, which is what a person typed.
func searchTraced(ctx context.Context, ix *catalog.Index, query, kind string, limit int) []catalog.Hit {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() {
		return ix.Search(query, kind, limit)
	}
	_, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "schoolgate catalog search")
	defer span.End()
	hits := ix.Search(query, kind, limit)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("schoolgate.catalog.kind", kind), attribute.Int("schoolgate.catalog.hits", len(hits)))
	}
	return hits
}
