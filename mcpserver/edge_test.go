package mcpserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/policy"
)

const listBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`

func TestOriginPolicy(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		origin string
		allow  bool
	}{
		{"", true}, // no Origin: not a browser, the Host check applies
		{testOrigin, true},
		{"https://SCHOOL.example:443", true},
		{"https://claude.ai", true},
		{"https://inspector.example:8443", true},
		{"http://localhost:6274", true},
		{"http://127.0.0.1:6274", true},
		{"http://[::1]:6274", true},
		{"http://localhost", true},
		{"http://school.example", false}, // the site is https
		{"http://evil.example", false},
		{"http://evil.example:6274", false},
		{"http://127.0.0.1.evil.example", false},
		{"null", false},
		{"file://", false},
		{"https://school.example/path", false},
		{"https://user@school.example", false},
		{"chrome-extension://abcdef", false},
		{"garbage", false},
	}
	for _, tt := range tests {
		t.Run(tt.origin, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.origin != "" {
				hdr["Origin"] = tt.origin
			}
			resp := h.as(t).post("", listBody, hdr)
			if tt.allow {
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d", resp.StatusCode)
				}
				if tt.origin != "" && resp.Header.Get("Access-Control-Allow-Origin") != tt.origin {
					t.Fatalf("ACAO %q", resp.Header.Get("Access-Control-Allow-Origin"))
				}
				if tt.origin != "" && !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate") {
					t.Fatal("WWW-Authenticate must be exposed")
				}
				return
			}
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("status %d, want 403", resp.StatusCode)
			}
			if resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Fatal("a refused origin must not get CORS headers")
			}
			r := readReply(t, resp)
			if r.Error == nil || !strings.Contains(r.Error.Message, "Origin") {
				t.Fatalf("want a JSON-RPC error naming the Origin, got %+v", r)
			}
		})
	}
}

func TestHostPolicy(t *testing.T) {
	handler, err := New(Options{SiteName: testSchool, Origin: testOrigin, Catalog: demoIndexFunc(t)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host  string
		allow bool
	}{
		{"school.example", true},
		{"School.Example:443", true},
		{"localhost:8080", true},
		{"127.0.0.1:8080", true},
		{"[::1]:8080", true},
		{"school.example:8443", false},
		{"evil.example", false},
		{"10.0.0.5:8080", false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(listBody))
			req.Host = tt.host
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			if got := rec.Code == http.StatusOK; got != tt.allow {
				t.Fatalf("status %d, allow %v: %s", rec.Code, tt.allow, rec.Body)
			}
		})
	}
}

func demoIndexFunc(t *testing.T) func(context.Context) *catalog.Index {
	ix := demoIndex(t)
	return func(context.Context) *catalog.Index { return ix }
}

func TestCORSPreflight(t *testing.T) {
	h := newHarness(t)
	req, _ := http.NewRequest(http.MethodOptions, h.srv.URL+"/mcp", nil)
	req.Header.Set("Origin", "https://claude.ai")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-protocol-version")
	req.Header.Set("Authorization", "Bearer member") // the gateway lets preflights through untouched
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("status %d", resp.StatusCode)
	}
	want := map[string]string{
		"Access-Control-Allow-Origin":   "https://claude.ai",
		"Access-Control-Allow-Methods":  "GET, POST, DELETE, OPTIONS",
		"Access-Control-Allow-Headers":  "Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID",
		"Access-Control-Expose-Headers": "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, DPoP-Nonce",
		"Access-Control-Max-Age":        "",
	}
	for k, v := range want {
		got := resp.Header.Get(k)
		if got == "" || !strings.HasPrefix(got, v) {
			t.Errorf("%s = %q, want prefix %q", k, got, v)
		}
	}
	if !strings.HasSuffix(resp.Header.Get("Access-Control-Allow-Headers"), ", DPoP") {
		t.Errorf("the DPoP proof header is not allowed: %q", resp.Header.Get("Access-Control-Allow-Headers"))
	}
	if resp.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Error("credentials must not be allowed")
	}
	if !strings.Contains(resp.Header.Get("Vary"), "Origin") {
		t.Error("Vary: Origin missing")
	}

	req.Header.Set("Origin", "http://evil.example")
	resp2, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusForbidden || resp2.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from a refused origin: %d", resp2.StatusCode)
	}
}

func TestMethods(t *testing.T) {
	h := newHarness(t)
	for _, method := range []string{http.MethodGet, http.MethodDelete, http.MethodPut, http.MethodHead} {
		t.Run(method, func(t *testing.T) {
			req, _ := http.NewRequest(method, h.srv.URL+"/mcp", nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", testVersion)
			resp, err := h.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST, OPTIONS" {
				t.Fatalf("status %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
			}
		})
	}
}

func TestBodyCap(t *testing.T) {
	h := newHarness(t)
	pad := strings.Repeat(" ", maxBodyBytes)
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_catalog","arguments":{"query":"x"}}}` + pad

	resp := h.post("", big, nil)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
	if r := readReply(t, resp); r.Error == nil || !strings.Contains(r.Error.Message, "larger") {
		t.Fatalf("want a JSON-RPC error, got %+v", r)
	}

	// Without a Content-Length the cap must hold while streaming.
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/mcp", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked: status %d, want 413", resp.StatusCode)
	}

	// Just under the cap is served.
	ok := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	ok += strings.Repeat(" ", maxBodyBytes-len(ok))
	if resp := h.post("", ok, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("body at the cap: status %d", resp.StatusCode)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, origin := range []string{"", "school.example", "ftp://school.example", "https://school.example/mcp"} {
		if _, err := New(Options{Origin: origin}); err == nil {
			t.Errorf("origin %q accepted", origin)
		}
	}
	if _, err := New(Options{Origin: testOrigin + "/"}); err != nil {
		t.Errorf("trailing slash: %v", err)
	}
}

func FuzzAllowOrigin(f *testing.F) {
	site, err := parseSiteOrigin(testOrigin)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{testOrigin, "null", "http://localhost:1", "http://[::1]:2", "https://a", "http://127.0.0.1.nip.io", "http://0x7f.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, origin string) {
		if !site.allowOrigin(origin) {
			return
		}
		// Whatever is allowed must be an https origin, the site, or a
		// plain-http loopback origin: never an http name an attacker
		// could rebind.
		c, ok := policy.NormalizeOrigin(origin)
		if !ok {
			t.Fatalf("allowed unparsable origin %q", origin)
		}
		if rest, isHTTP := strings.CutPrefix(c, "http://"); isHTTP && !policy.IsLoopbackHost(rest) {
			t.Fatalf("allowed rebindable origin %q", origin)
		}
		_ = site.allowHost(origin)
	})
}

// A batch is valid JSON that the protocol no longer accepts: -32600,
// while broken JSON stays a parse error.
func TestBatchIsInvalidRequest(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name, body string
		status     int
		code       int
	}{
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, http.StatusBadRequest, -32600},
		{"batch after white space", " \n[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", http.StatusBadRequest, -32600},
		{"empty batch", `[]`, http.StatusBadRequest, -32600},
		{"broken JSON", `[{"jsonrpc":`, http.StatusBadRequest, -32700},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.post("", tt.body, nil)
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if r := readReply(t, resp); r.Error == nil || r.Error.Code != tt.code {
				t.Fatalf("want JSON-RPC error %d, got %+v", tt.code, r)
			}
		})
	}
}

// Agents are told the site's origin in its one spelling, however the
// gateway's configuration spelled it: it is the resource they request.
func TestOriginOneSpelling(t *testing.T) {
	s, err := newMCPServer(Options{Origin: "HTTPS://School.Example:443/"})
	if err != nil {
		t.Fatal(err)
	}
	if s.opts.SiteName != testOrigin || s.opts.ResourceMetadataURL != testOrigin+"/.well-known/oauth-protected-resource" {
		t.Errorf("name %q, metadata %q", s.opts.SiteName, s.opts.ResourceMetadataURL)
	}
	if text := s.instructions(); !strings.Contains(text, "resource="+testOrigin+" ") || strings.Contains(text, "School.Example") {
		t.Errorf("instructions: %s", text)
	}
}
