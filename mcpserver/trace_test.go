package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/schooltest"
)

// An MCP tool call's span follows the semantic conventions for MCP: its
// name, kind, attributes, and its parent the trace context the client
// sent in params._meta (linked to the request's span), else the
// request's span; nothing of the arguments or the caller in it.
func TestTraceToolCall(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	s, err := newMCPServer(Options{SiteName: testSchool, Origin: testOrigin, ResourceMetadataURL: testMetadata,
		Catalog: func(context.Context) *catalog.Index { return demoIndex(t) }})
	if err != nil {
		t.Fatal(err)
	}
	h := s.handler()
	var request trace.SpanContext
	// served tells that a request's spans have ended: the client has its
	// answer before the handler returns and ends them.
	served := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { served <- struct{}{} }()
		ctx, span := tp.Tracer("caddy").Start(r.Context(), "caddy request")
		defer span.End()
		request = span.SpanContext()
		h.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer srv.Close()
	call := func(body string) {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", testVersion)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		<-served
	}
	const sent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	call(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_catalog","arguments":{"query":"private words of mia"},"_meta":{"traceparent":"` + sent + `"}}}`)
	span := schooltest.SpanNamed(t, exp.GetSpans(), "tools/call search_catalog")
	if span.SpanKind != trace.SpanKindServer {
		t.Errorf("kind %v, want server", span.SpanKind)
	}
	if span.Parent.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || span.Parent.SpanID().String() != "b7ad6b7169203331" {
		t.Errorf("parent %v, want the _meta traceparent's", span.Parent)
	}
	if len(span.Links) != 1 || span.Links[0].SpanContext.SpanID() != request.SpanID() {
		t.Errorf("links %v, want the request's span", span.Links)
	}
	attrs := map[string]string{}
	for _, a := range span.Attributes {
		attrs[string(a.Key)] = a.Value.Emit()
		if strings.Contains(a.Value.Emit(), "private words") {
			t.Errorf("attribute %s holds the tool's arguments", a.Key)
		}
	}
	for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "search_catalog",
		"gen_ai.operation.name": "execute_tool", "jsonrpc.request.id": "7", "mcp.protocol.version": testVersion} {
		if attrs[k] != v {
			t.Errorf("%s = %q, want %q (all %v)", k, attrs[k], v, attrs)
		}
	}

	search := schooltest.SpanNamed(t, exp.GetSpans(), "schoolgate catalog search")
	if search.Parent.SpanID() != span.SpanContext.SpanID() {
		t.Errorf("the catalog search is not a child of the tool call's span")
	}
	for _, a := range search.Attributes {
		if strings.Contains(a.Value.Emit(), "private words") {
			t.Errorf("the search's attribute %s holds the query", a.Key)
		}
	}

	exp.Reset()
	call(`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`)
	list := schooltest.SpanNamed(t, exp.GetSpans(), "tools/list")
	if list.Parent.SpanID() != request.SpanID() || len(list.Links) != 0 {
		t.Errorf("tools/list's parent %v, want the request's span %v", list.Parent.SpanID(), request.SpanID())
	}
}
