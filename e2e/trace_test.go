package e2e

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receivedSpan is a span as the OTLP receiver got it.
type receivedSpan struct {
	name, traceID, spanID, parentID, scope string
	attrs                                  map[string]string
}

// otlpReceiver is an in-process OTLP/HTTP trace receiver.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []receivedSpan
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				attrs := map[string]string{}
				for _, kv := range s.Attributes {
					attrs[kv.Key] = fmt.Sprint(kv.Value.GetStringValue(), kv.Value.GetIntValue(), kv.Value.GetBoolValue())
					if v := kv.Value.GetStringValue(); v != "" {
						attrs[kv.Key] = v
					}
				}
				o.spans = append(o.spans, receivedSpan{name: s.Name, traceID: hex.EncodeToString(s.TraceId),
					spanID: hex.EncodeToString(s.SpanId), parentID: hex.EncodeToString(s.ParentSpanId),
					scope: ss.GetScope().GetName(), attrs: attrs})
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write([]byte{})
}

// wait returns the first span named name that match accepts, within
// 10 s.
func (o *otlpReceiver) wait(t *testing.T, name string, match func(receivedSpan) bool) receivedSpan {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		o.mu.Lock()
		spans := append([]receivedSpan(nil), o.spans...)
		o.mu.Unlock()
		for _, s := range spans {
			if s.name == name && (match == nil || match(s)) {
				return s
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no span %q received", name)
	return receivedSpan{}
}

// With Caddy's tracing on and its spans exported by OTLP to a receiver in
// the test: a code exchange, a protected request and an MCP tool call
// are each traced beneath Caddy's request span, the request sent on to
// the school carries the legacy call span's traceparent, an MCP call's
// span is a child of the trace context the client sent in _meta, and no
// attribute of any span holds the run's tokens or the person's e-mail.
func TestTraces(t *testing.T) {
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.URL+"/v1/traces")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")

	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	block := siteBlock(port, sch.URL, filepath.Join(dir, "a"),
		vendorBlock("Member App", "member-app", redirect, "member", "openid profile email account:read"))
	block = strings.Replace(block, "\tschool_gateway", "\ttracing {\n\t\tspan gateway\n\t}\n\tschool_gateway", 1)
	gw := startGateway(t, dir, block)

	tok := tokenFor(t, gw.URL, "member-app", redirect, "openid profile email account:read", "student@demo.school", "student")
	exch := recv.wait(t, "oauth token", nil)
	if exch.attrs["oauth.grant_type"] != "authorization_code" || exch.attrs["schoolgate.outcome"] != "issued" ||
		exch.attrs["oauth.client_id"] != "member-app" {
		t.Errorf("oauth token's attributes: %v", exch.attrs)
	}
	parentOf := func(s receivedSpan) receivedSpan {
		for _, p := range recv.spans {
			if p.spanID == s.parentID {
				return p
			}
		}
		return receivedSpan{}
	}
	recv.mu.Lock()
	if p := parentOf(exch); p.name != "gateway" {
		t.Errorf("oauth token's parent is %q, want Caddy's request span", p.name)
	}
	recv.mu.Unlock()

	if r := call(t, "POST", gw.URL+"/account/graphql", tok.AccessToken, viewerQuery, nil); r.status != 200 {
		t.Fatalf("protected request: %d", r.status)
	}
	legacy := recv.wait(t, "schoolgate legacy call", func(s receivedSpan) bool { return s.attrs["url.path"] == "/account/graphql" })
	sent := lastUpstreamRequest(t, sch.URL).Get("Traceparent")
	if want := "00-" + legacy.traceID + "-" + legacy.spanID + "-01"; sent != want {
		t.Errorf("the school received traceparent %q, want the legacy call span's %q", sent, want)
	}
	recv.mu.Lock()
	if p := parentOf(legacy); p.name != "gateway" {
		t.Errorf("the legacy call's parent is %q, want Caddy's request span", p.name)
	}
	recv.mu.Unlock()
	recv.wait(t, "schoolgate token validation", func(s receivedSpan) bool { return s.traceID == legacy.traceID })

	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	mcp := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_catalog","arguments":{"query":"portrait"},` +
		`"_meta":{"traceparent":"00-` + clientTrace + `-` + clientSpan + `-01"}}}`
	if r := call(t, "POST", gw.URL+"/mcp", "", mcp, map[string]string{"Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2025-11-25"}); r.status != 200 {
		t.Fatalf("MCP tool call: %d", r.status)
	}
	tool := recv.wait(t, "tools/call search_catalog", nil)
	if tool.traceID != clientTrace || tool.parentID != clientSpan || tool.attrs["gen_ai.tool.name"] != "search_catalog" {
		t.Errorf("the tool call's span: trace %s parent %s attributes %v; want the client's _meta context", tool.traceID, tool.parentID, tool.attrs)
	}

	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, s := range recv.spans {
		for k, v := range s.attrs {
			for _, secret := range []string{tok.AccessToken, tok.RefreshToken, "student@demo.school"} {
				if strings.Contains(v, secret) {
					t.Errorf("span %q (%s) attribute %s holds a secret of the run", s.name, s.scope, k)
				}
			}
		}
	}
}
