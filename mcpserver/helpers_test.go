package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/schooltest"
)

const (
	testOrigin   = "https://school.example"
	testMetadata = testOrigin + "/.well-known/oauth-protected-resource"
	testSchool   = "Demo School of Photography"
	testVersion  = "2025-11-25"
)

// Tokens the stub gateway accepts, standing in for the school's
// token validation.
var testTokens = map[string]*policy.Token{
	"member":   {Subject: "m-1", Email: "mia@example.com", Name: "Mia", ClientID: "app", Audience: policy.AudienceMember, Scopes: []string{"openid", "account:read"}},
	"writer":   {Subject: "m-2", Email: "wes@example.com", ClientID: "app", Audience: policy.AudienceMember, Scopes: []string{"account:read", "account:write"}},
	"noread":   {Subject: "m-3", Email: "nora@example.com", ClientID: "app", Audience: policy.AudienceMember, Scopes: []string{"openid", "profile"}},
	"operator": {Subject: "o-1", Email: "otto@example.com", ClientID: "cli", Audience: policy.AudienceOperator, Scopes: []string{"openid", "courses:read"}},
}

func demoIndex(t testing.TB) *catalog.Index {
	t.Helper()
	raw, err := os.ReadFile("../demoschool/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := catalog.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return catalog.NewIndex(testOrigin, f)
}

// accountCall is what the fake Account API received.
type accountCall struct {
	id        *policy.Token
	query     string
	variables map[string]any
}

type fakeAccount struct {
	mu      sync.Mutex
	calls   []accountCall
	respond func(id *policy.Token, query string, vars map[string]any) (json.RawMessage, error)
}

func (a *fakeAccount) call(_ context.Context, id *policy.Token, query string, vars map[string]any) (json.RawMessage, error) {
	a.mu.Lock()
	a.calls = append(a.calls, accountCall{id, query, vars})
	respond := a.respond
	a.mu.Unlock()
	if id == nil {
		return nil, fmt.Errorf("fake account API called without an identity")
	}
	if respond != nil {
		return respond(id, query, vars)
	}
	return json.RawMessage(fmt.Sprintf(`{"data":{"viewer":{"id":%q,"email":%q,"enrolledCourses":{"nodes":[
		{"slug":"portrait-photography","expireDate":"2027-06-30","hasLifetimeAccess":false,"lastWatchedLecture":{"lectureId":"l-7","positionSeconds":312}},
		{"slug":"retired-course","expireDate":null,"hasLifetimeAccess":true,"lastWatchedLecture":null}]}}}}`, id.Subject, id.Email)), nil
}

func (a *fakeAccount) last(t *testing.T) accountCall {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.calls) == 0 {
		t.Fatal("the Account API was not called")
	}
	return a.calls[len(a.calls)-1]
}

func (a *fakeAccount) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.calls)
}

// logSink collects what the server logs (schooltest.Buffer: t.Logf
// cannot be used from goroutines that may outlive a test).
type logSink struct{ schooltest.Buffer }

func (l *logSink) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

type harness struct {
	t       testing.TB
	srv     *httptest.Server
	account *fakeAccount
	index   *atomic.Pointer[catalog.Index]
	logs    *logSink
}

// as returns the harness reporting to t, for use inside subtests.
func (h *harness) as(t testing.TB) *harness {
	c := *h
	c.t = t
	return &c
}

// newHarness serves the MCP handler behind a stub of the gateway: a known
// bearer token becomes its validated token in the context and the Authorization
// header is removed, as the school (package school) does.
func newHarness(t testing.TB, edit ...func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, account: &fakeAccount{}, logs: &logSink{}, index: &atomic.Pointer[catalog.Index]{}}
	h.index.Store(demoIndex(t))
	o := Options{
		SiteName: testSchool, Origin: testOrigin, ResourceMetadataURL: testMetadata,
		Catalog: func(context.Context) *catalog.Index { return h.index.Load() }, Account: h.account.call, Logger: h.logs.logger(),
	}
	for _, e := range edit {
		e(&o)
	}
	s, err := newMCPServer(o)
	if err != nil {
		t.Fatal(err)
	}
	handler := s.handler()
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			id, known := testTokens[tok]
			if !known {
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
				http.Error(w, "invalid token", http.StatusUnauthorized)
				return
			}
			r.Header.Del("Authorization")
			r = r.WithContext(WithIdentity(r.Context(), id))
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// post sends a raw request to /mcp.
func (h *harness) post(token, body string, header map[string]string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", testVersion)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// readReply decodes a JSON-RPC reply sent as JSON or as one SSE event.
func readReply(t testing.TB, resp *http.Response) rpcReply {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var data []byte
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				data = []byte(strings.TrimSpace(d))
			}
		}
		body = data
	}
	var r rpcReply
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("status %d, not a JSON-RPC reply: %v\n%s", resp.StatusCode, err, body)
	}
	return r
}

// rpc sends one JSON-RPC request and returns the reply.
func (h *harness) rpc(token, method string, params any) rpcReply {
	h.t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp := h.post(token, string(body), nil)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		h.t.Fatalf("%s: status %d: %s", method, resp.StatusCode, b)
	}
	return readReply(h.t, resp)
}

type toolReply struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

func (r toolReply) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// callTool calls a tool and fails the test on a protocol-level error: tool
// failures must come back as results.
func (h *harness) callTool(token, name string, args any) toolReply {
	h.t.Helper()
	r := h.rpc(token, "tools/call", map[string]any{"name": name, "arguments": args})
	if r.Error != nil {
		h.t.Fatalf("tools/call %s: protocol error %+v (tool failures must be isError results)", name, r.Error)
	}
	var tr toolReply
	if err := json.Unmarshal(r.Result, &tr); err != nil {
		h.t.Fatal(err)
	}
	return tr
}

// okTool calls a tool that must succeed and decodes its structured content,
// checking that the text content says the same.
func (h *harness) okTool(token, name string, args any, out any) toolReply {
	h.t.Helper()
	tr := h.callTool(token, name, args)
	if tr.IsError {
		h.t.Fatalf("%s failed: %s", name, tr.text())
	}
	if len(tr.StructuredContent) == 0 {
		h.t.Fatalf("%s: no structured content", name)
	}
	if !jsonEqual(tr.StructuredContent, []byte(tr.text())) {
		h.t.Fatalf("%s: text and structured content differ:\n%s\n%s", name, tr.text(), tr.StructuredContent)
	}
	if out != nil {
		if err := json.Unmarshal(tr.StructuredContent, out); err != nil {
			h.t.Fatal(err)
		}
	}
	return tr
}

// failTool calls a tool that must fail with a tool error mentioning want.
func (h *harness) failTool(token, name string, args any, want string) {
	h.t.Helper()
	tr := h.callTool(token, name, args)
	if !tr.IsError {
		h.t.Fatalf("%s(%v) succeeded, want an error about %q: %s", name, args, want, tr.text())
	}
	if !strings.Contains(tr.text(), want) {
		h.t.Fatalf("%s(%v) error %q does not mention %q", name, args, tr.text(), want)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// newValidatingServer registers tools on a bare mcp-go server with output
// schema validation on.
func newValidatingServer(t *testing.T, defs []toolDef, handlers map[string]func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)) *server.MCPServer {
	t.Helper()
	core := server.NewMCPServer("validate", "1", server.WithOutputSchemaValidation())
	for _, d := range defs {
		core.AddTool(d.tool(), handlers[d.name])
	}
	return core
}
