// Package mcpserver is a school's MCP server at /mcp: public catalog tools
// for anyone, member tools for a signed-in member, over Streamable HTTP.
// It is plain net/http on top of mcp-go; the school (package school)
// mounts it and does the token validation in front of it.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/mark3labs/mcp-go/server"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/policy"
)

// serverName and serverVersion identify the implementation in
// initialize; the school's name goes into the title.
const (
	serverName    = "schoolgate"
	serverVersion = "1.0.0"
)

// AccountFunc runs a GraphQL query at the school's Account API as the
// member id and returns the raw GraphQL response.
type AccountFunc func(ctx context.Context, id *policy.Token, query string, variables map[string]any) (json.RawMessage, error)

// Options configure a school's MCP server.
type Options struct {
	// SiteName is the school's name, shown to agents.
	SiteName string
	// Origin is the site's public origin: the OAuth resource, and the
	// only non-https, non-loopback origin browsers may call from.
	Origin string
	// ResourceMetadataURL is the RFC 9728 protected resource metadata
	// document that tells a client how to sign in.
	ResourceMetadataURL string
	// Authorize applies a member tool's requirement to the caller's token
	// and returns the step-up challenge, nil if the token may call it:
	// the school's guard, whose challenges name the schemes the school
	// takes. Nil is policy.Authorize (Bearer challenges only).
	Authorize func(*policy.Token, policy.Requirement) *policy.Challenge
	// Catalog returns the current catalog, nil while there is none. Just
	// after start-up it may wait, no longer than ctx allows, for a first
	// import already under way.
	Catalog func(context.Context) *catalog.Index
	// Account runs a query at the upstream Account API with the member's
	// identity.
	Account AccountFunc
	// Logger receives operational problems: upstream failures (warn),
	// panics and mcp-go's transport errors (error). Nil discards them.
	Logger *slog.Logger
}

type mcpServer struct {
	opts Options
	site siteOrigin
}

// New returns the /mcp handler.
//
// It runs mcp-go's Streamable HTTP transport in stateless mode: no session
// is created at initialize and none is looked up afterwards, so any of
// several gateway instances behind a load balancer can answer any request
// of a conversation, and a restart loses nothing. Nothing the tools do
// needs a session: the identity comes with each request's token and the
// catalog is the same on every instance.
func New(o Options) (http.Handler, error) {
	s, err := newMCPServer(o)
	if err != nil {
		return nil, err
	}
	return s.handler(), nil
}

func newMCPServer(o Options) (*mcpServer, error) {
	if o.Origin == "" {
		return nil, errors.New("mcpserver: Origin is required")
	}
	site, err := parseSiteOrigin(o.Origin)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: %v", err)
	}
	// What agents are told (the resource, the metadata URL, the name by
	// default) uses the origin's one spelling, whatever was passed.
	o.Origin = site.origin
	if o.SiteName == "" {
		o.SiteName = o.Origin
	}
	if o.Authorize == nil {
		o.Authorize = policy.Authorize
	}
	if o.ResourceMetadataURL == "" {
		o.ResourceMetadataURL = o.Origin + "/.well-known/oauth-protected-resource"
	}
	if o.Catalog == nil {
		o.Catalog = func(context.Context) *catalog.Index { return nil }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &mcpServer{opts: o, site: site}, nil
}

func (s *mcpServer) handler() http.Handler {
	hooks := &server.Hooks{}
	hooks.AddAfterListTools(hideMemberTools)
	core := server.NewMCPServer(serverName, serverVersion,
		server.WithTitle(s.opts.SiteName),
		server.WithInstructions(s.instructions()),
		server.WithToolCapabilities(false),
		// No subscriptions and no list_changed: a stateless server has no
		// session to notify; clients list again to see a new catalog.
		server.WithResourceCapabilities(false, false),
		server.WithPaginationLimit(listPageSize),
		server.WithHooks(hooks),
		server.WithToolHandlerMiddleware(s.guard),
		server.WithResourceHandlerMiddleware(s.guardResource),
	)
	s.addTools(core)
	s.addResources(core, hooks)
	transport := server.NewStreamableHTTPServer(core,
		server.WithStateLess(true),
		// mcp-go's own rebinding guard refuses loopback connections whose
		// Host is not literally localhost, which is every request Caddy
		// proxies on the same machine; the edge does the check instead,
		// knowing the site's real origin.
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(s.opts.Logger.With("component", "mcp-transport")),
	)
	return &edge{site: s.site, resourceMetadata: s.opts.ResourceMetadataURL, authorize: s.opts.Authorize, next: transport}
}
