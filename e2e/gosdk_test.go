package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// The official MCP Go SDK (modelcontextprotocol/go-sdk) against /mcp, as
// its users run it: the stock streamable transport (with its standalone
// SSE stream left on), the stock authorization-code handler discovering
// the authorization server from the protected resource metadata,
// registering dynamically or naming itself by a Client ID Metadata
// Document, authorizing with PKCE, a resource indicator and RFC 9207's
// iss, and the member tools with the token it got.

var (
	sdkPublicTools = []string{"get_course", "list_events", "list_membership_plans", "search_catalog"}
	sdkMemberTools = []string{"account_query", "my_enrollments"}
)

func sdkConnect(ctx context.Context, t *testing.T, mcpURL string, h auth.OAuthHandler) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "schoolgate-e2e-go-sdk", Version: "1.0.0"}, nil)
	s, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: mcpURL, OAuthHandler: h}, nil)
	if err != nil {
		t.Fatalf("the Go SDK could not connect: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func sdkToolNames(ctx context.Context, t *testing.T, s *sdk.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range s.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// sdkCall calls a tool and returns its result and its text content.
func sdkCall(ctx context.Context, t *testing.T, s *sdk.ClientSession, name string, args map[string]any) (*sdk.CallToolResult, string) {
	t.Helper()
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: a protocol error: %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return res, text.String()
}

// challenged is a request to /mcp with a token it does not know and the
// 401 it gets. /mcp serves anonymous callers, so the SDK never meets a 401
// of its own: an application that wants the member tools starts the flow
// from such a challenge.
func challenged(ctx context.Context, t *testing.T, mcpURL string) (*http.Request, *http.Response) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer sgat_not-a-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an unknown token at /mcp: %d, want 401", resp.StatusCode)
	}
	return req, resp
}

func TestOfficialGoSDK(t *testing.T) {
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	// A client that registers itself with a loopback redirect is an
	// operator's tool; member tools need a member client, here a vendor's
	// that dynamic registration under its name and redirect returns.
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	// A client without registration names itself by the https URL of its
	// Client ID Metadata Document, served here on loopback by a server
	// whose certificate Caddy trusts (SSL_CERT_FILE).
	docURL := serveMetadataDocument(t, "/agents/go-sdk.json", redirect)
	gw := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "site"),
		vendorBlock("Go SDK App", "go-sdk-app", redirect, "member", "openid profile email account:read")))
	ctx := t.Context()
	mcpURL := gw.URL + "/mcp"

	t.Run("anonymous", func(t *testing.T) {
		s := sdkConnect(ctx, t, mcpURL, nil)
		// The newest version this SDK release speaks, which mcp-go serves
		// too: every request below also carries the Mcp-Method and
		// Mcp-Name headers that version requires.
		if v := s.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Errorf("negotiated protocol version %s, want 2026-07-28", v)
		}
		if got := sdkToolNames(ctx, t, s); !slices.Equal(got, sdkPublicTools) {
			t.Errorf("anonymous tools: %v, want %v", got, sdkPublicTools)
		}
		res, text := sdkCall(ctx, t, s, "search_catalog", map[string]any{"query": "portraits"})
		if res.IsError || !strings.Contains(text, "portrait-photography") {
			t.Fatalf("search_catalog portraits: error %v, text %.300s", res.IsError, text)
		}
		// The structured content is the text's JSON, decoded (the SDK
		// checks it against the tool's output schema).
		structured, err := json.Marshal(res.StructuredContent)
		if err != nil || !strings.Contains(string(structured), `"slug":"portrait-photography"`) {
			t.Errorf("structured content: %s (%v)", structured, err)
		}
		if res, text := sdkCall(ctx, t, s, "my_enrollments", nil); !res.IsError {
			t.Errorf("an anonymous my_enrollments must be a tool error: %.300s", text)
		}
		if res, _ := sdkCall(ctx, t, s, "search_catalog", map[string]any{"query": "x", "kind": "spaceship"}); !res.IsError {
			t.Error("an unknown kind must be a tool error")
		}

		// The same items as resources, listed (the SDK pages through
		// them) and read.
		const course = "school://courses/portrait-photography"
		listed := false
		for r, err := range s.Resources(ctx, nil) {
			if err != nil {
				t.Fatalf("resources/list: %v", err)
			}
			listed = listed || r.URI == course
		}
		if !listed {
			t.Errorf("resources/list lacks %s", course)
		}
		read, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: course})
		if err != nil || len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, "Portrait Photography") {
			t.Errorf("resources/read %s: %+v, %v", course, read, err)
		}
		if _, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "school://courses/no-such-course"}); err == nil {
			t.Error("reading an unknown course must fail")
		}
	})

	// member signs in through the SDK's handler configured by cfg, as
	// the client clientID, and uses the member tools with the token it got.
	member := func(t *testing.T, clientID string, cfg *auth.AuthorizationCodeHandlerConfig) {
		var authorizeURL string
		signIns := 0
		cfg.RequestRefreshToken = true
		cfg.AuthorizationCodeFetcher = func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			authorizeURL = args.URL
			signIns++
			q := newBrowser(t, redirect).signInAndApprove(gw.URL, args.URL, "student@demo.school", "student").Query()
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		}
		// The token the code bought is handed back expired, so that its
		// first use refreshes through the SDK's oauth2 configuration (the
		// client authentication it chose from the server's metadata).
		var issued oauth2.Token
		cfg.NewTokenSource = func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			issued = *tok
			stale := *tok
			stale.Expiry = time.Now().Add(-time.Minute)
			return c.TokenSource(ctx, &stale), nil
		}
		h, err := auth.NewAuthorizationCodeHandler(cfg)
		if err != nil {
			t.Fatal(err)
		}

		req, resp := challenged(ctx, t, mcpURL)
		if err := h.Authorize(ctx, req, resp); err != nil {
			t.Fatalf("the Go SDK's authorization flow failed: %v", err)
		}
		au, err := url.Parse(authorizeURL)
		if err != nil || au.Query().Get("client_id") != clientID || au.Query().Get("code_challenge_method") != "S256" || au.Query().Get("resource") != gw.URL {
			t.Errorf("authorization URL: %s, want client_id %s, PKCE S256 and resource %s", authorizeURL, clientID, gw.URL)
		}
		// RequestRefreshToken: the SDK adds offline_access, which the
		// authorization server metadata lists, and is not refused for it.
		if !slices.Contains(strings.Fields(au.Query().Get("scope")), "offline_access") {
			t.Errorf("authorization URL scope %q lacks offline_access", au.Query().Get("scope"))
		}
		ts, err := h.TokenSource(ctx)
		if err != nil || ts == nil {
			t.Fatalf("no token source after the flow: %v", err)
		}
		tok, err := ts.Token()
		if err != nil || !strings.HasPrefix(tok.AccessToken, "sgat_") || tok.RefreshToken == "" {
			t.Fatalf("token: %+v, %v", tok, err)
		}
		if tok.AccessToken == issued.AccessToken || tok.RefreshToken == issued.RefreshToken || issued.RefreshToken == "" {
			t.Fatalf("the refresh did not rotate the pair: issued %q/%q, now %q/%q",
				issued.AccessToken, issued.RefreshToken, tok.AccessToken, tok.RefreshToken)
		}

		s := sdkConnect(ctx, t, mcpURL, h)
		want := slices.Sorted(slices.Values(append(slices.Clone(sdkPublicTools), sdkMemberTools...)))
		if got := sdkToolNames(ctx, t, s); !slices.Equal(got, want) {
			t.Errorf("member tools: %v, want %v", got, want)
		}
		res, text := sdkCall(ctx, t, s, "my_enrollments", nil)
		if res.IsError || !strings.Contains(text, "portrait-photography") || strings.Contains(text, "landscape-photography") {
			t.Errorf("my_enrollments: error %v, text %.400s", res.IsError, text)
		}
		res, text = sdkCall(ctx, t, s, "account_query", map[string]any{"query": "{ viewer { id email } }"})
		if res.IsError || !strings.Contains(text, "student@demo.school") {
			t.Errorf("account_query: error %v, text %.300s", res.IsError, text)
		}

		// A revoked token: /mcp answers 401 with a challenge (never an
		// anonymous answer), the SDK runs its flow again on it, and the
		// call goes through with the new token.
		if r := postForm(t, gw.URL+"/api/oauth/revoke", url.Values{"token": {tok.AccessToken}, "client_id": {clientID}}); r.status != http.StatusOK {
			t.Fatalf("revoke: %d %s", r.status, r.body)
		}
		res, text = sdkCall(ctx, t, s, "my_enrollments", nil)
		if res.IsError || !strings.Contains(text, "portrait-photography") || signIns != 2 {
			t.Errorf("after revocation: error %v, sign-ins %d (want 2), text %.300s", res.IsError, signIns, text)
		}
	}

	t.Run("member through registration", func(t *testing.T) {
		member(t, "go-sdk-app", &auth.AuthorizationCodeHandlerConfig{
			DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:   "Go SDK App",
				RedirectURIs: []string{redirect},
				GrantTypes:   []string{"authorization_code", "refresh_token"},
			}},
		})
	})

	// The SDK tries a metadata document before registration when the
	// authorization server says it supports them; unreviewed, the client
	// gets the read and identity scopes /mcp asks for.
	t.Run("member through a metadata document", func(t *testing.T) {
		member(t, docURL, &auth.AuthorizationCodeHandlerConfig{
			ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: docURL},
			RedirectURL:                    redirect,
		})
	})

	// Step-up (MCP authorization, scope challenge handling): a member
	// token granted without account:read still lists the member tools,
	// and a call of one is answered 403 with the Account API's challenge
	// naming the scope, on which the SDK's handler authorizes again for
	// its scopes and that one and repeats the call, which then succeeds.
	t.Run("step-up", func(t *testing.T) {
		stepUp(ctx, t, gw.URL, "go-sdk-app", redirect)
	})

	// A client that registers itself under a name of its own with a
	// loopback redirect gets an operator client, which may not hold the
	// member scopes /mcp asks for: the SDK's flow ends with the
	// authorization server's invalid_scope at the redirect URI, before
	// any sign-in, saying how a member client is had, and the SDK reports
	// it.
	t.Run("self-registered", func(t *testing.T) {
		own := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
		h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
			DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:   "Some CLI",
				RedirectURIs: []string{own},
			}},
			AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
				resp, _ := newBrowser(t, own).get(args.URL)
				cb := callbackURL(t, resp)
				if resp.StatusCode != http.StatusFound || !strings.HasPrefix(cb.String(), own) {
					return nil, fmt.Errorf("authorize answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
				}
				if e := cb.Query().Get("error"); e != "" {
					return nil, fmt.Errorf("%s: %s", e, cb.Query().Get("error_description"))
				}
				return nil, fmt.Errorf("authorize redirected without an error: %s", cb)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		req, resp := challenged(ctx, t, mcpURL)
		err = h.Authorize(ctx, req, resp)
		if err == nil || !strings.Contains(err.Error(), "invalid_scope") || !strings.Contains(err.Error(), "member application") {
			t.Errorf("the flow of an operator client asking for member scopes: %v, want invalid_scope saying how to act for a member", err)
		}
	})
}

// serveMetadataDocument serves a public client's Client ID Metadata
// Document at path on a loopback https server and makes Caddy, started
// after it, trust that server's certificate. It returns the document's
// URL, which is its client_id.
func serveMetadataDocument(t *testing.T, path, redirect string) string {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"client_id":                  "https://" + r.Host + path,
			"client_name":                "Go SDK metadata-document agent",
			"redirect_uris":              []string{redirect},
			"grant_types":                []string{"authorization_code", "refresh_token"},
			"response_types":             []string{"code"},
			"token_endpoint_auth_method": "none",
		})
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", ca)
	return srv.URL + path
}

// stepUp is the scope challenge of a member tool's call, first as raw
// HTTP with a token that lacks account:read, then through the Go SDK's
// authorization-code handler, which answers it by itself.
func stepUp(ctx context.Context, t *testing.T, origin, clientID, redirect string) {
	mcpURL := origin + "/mcp"
	metadata := origin + "/.well-known/oauth-protected-resource"
	wantChallenge := `Bearer error="insufficient_scope", error_description="the access token lacks the scope account:read", scope="account:read", resource_metadata="` + metadata + `"`
	rpc := func(token, body string) response {
		return call(t, http.MethodPost, mcpURL, token, body, map[string]string{"Accept": "application/json, text/event-stream"})
	}
	const enrollments = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"my_enrollments","arguments":{}}}`

	noRead := tokenFor(t, origin, clientID, redirect, "openid profile", "student@demo.school", "student")
	if got := noRead.Extra("scope"); got != "openid profile" {
		t.Fatalf("granted %q, want openid profile", got)
	}
	r := rpc(noRead.AccessToken, enrollments)
	if r.status != http.StatusForbidden || r.header.Get("WWW-Authenticate") != wantChallenge || strings.Contains(string(r.body), "jsonrpc") {
		t.Fatalf("my_enrollments without account:read: %d %q %s\nwant 403 %q and no JSON-RPC answer", r.status, r.header.Get("WWW-Authenticate"), r.body, wantChallenge)
	}
	if account := call(t, http.MethodPost, origin+"/account/graphql", noRead.AccessToken, viewerQuery, nil); account.header.Get("WWW-Authenticate") != wantChallenge {
		t.Errorf("the Account API challenges the same token with %q", account.header.Get("WWW-Authenticate"))
	}
	r = rpc(noRead.AccessToken, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"my_enrollments"`) ||
		!strings.Contains(string(r.body), "Needs a member sign-in with scope account:read.") {
		t.Errorf("tools/list without account:read: %d %.400s", r.status, r.body)
	}
	if r = rpc(noRead.AccessToken, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_catalog","arguments":{"query":"portraits"}}}`); r.status != http.StatusOK {
		t.Errorf("search_catalog without account:read: %d %s", r.status, r.body)
	}
	if r = rpc("", enrollments); r.status != http.StatusOK || !strings.Contains(string(r.body), "needs a signed-in member") {
		t.Errorf("anonymous my_enrollments: %d %.300s", r.status, r.body)
	}

	// The SDK: its first authorization leaves account:read out (the
	// application asks for less than the resource offers, through the
	// handler's ScopeFilter); the step-up then asks for what the
	// challenge names beside what it was granted.
	var scopes []string
	cfg := &auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "Go SDK App", RedirectURIs: []string{redirect}, GrantTypes: []string{"authorization_code", "refresh_token"},
		}},
		RequestRefreshToken: true,
		ScopeFilter: func(discovered []string) []string {
			if len(scopes) == 0 {
				return slices.DeleteFunc(slices.Clone(discovered), func(s string) bool { return s == "account:read" })
			}
			return discovered
		},
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			u, err := url.Parse(args.URL)
			if err != nil {
				return nil, err
			}
			scopes = append(scopes, u.Query().Get("scope"))
			q := newBrowser(t, redirect).signInAndApprove(origin, args.URL, "student@demo.school", "student").Query()
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, resp := challenged(ctx, t, mcpURL)
	if err := h.Authorize(ctx, req, resp); err != nil {
		t.Fatalf("the first authorization: %v", err)
	}
	if len(scopes) != 1 || slices.Contains(strings.Fields(scopes[0]), "account:read") {
		t.Fatalf("first authorization asked for %q, want no account:read", scopes)
	}
	s := sdkConnect(ctx, t, mcpURL, h)
	want := slices.Sorted(slices.Values(append(slices.Clone(sdkPublicTools), sdkMemberTools...)))
	if got := sdkToolNames(ctx, t, s); !slices.Equal(got, want) {
		t.Errorf("tools without account:read: %v, want %v", got, want)
	}
	res, text := sdkCall(ctx, t, s, "my_enrollments", nil)
	if res.IsError || !strings.Contains(text, "portrait-photography") {
		t.Fatalf("my_enrollments after the step-up: error %v, text %.300s", res.IsError, text)
	}
	if len(scopes) != 2 {
		t.Fatalf("authorizations %q, want the first and one step-up", scopes)
	}
	got := strings.Fields(scopes[1])
	for _, sc := range append(strings.Fields(scopes[0]), "account:read") {
		if !slices.Contains(got, sc) {
			t.Errorf("the step-up asked for %q: it lacks %s (the first round's scopes and the challenge's)", scopes[1], sc)
		}
	}
}
