// Package sitepath is the URL space of a school's origin: every path the
// gateway answers itself or protects. Everything else belongs to the
// legacy site and is proxied to it untouched. It imports nothing of the
// project, so every package can name a path without importing the
// package that serves it.
package sitepath

import "strings"

// The authorization server's endpoints and discovery documents.
const (
	ProtectedResource = "/.well-known/oauth-protected-resource"
	ASMetadata        = "/.well-known/oauth-authorization-server"
	OIDCConfig        = "/.well-known/openid-configuration"
	JWKS              = "/.well-known/jwks.json"
	Authorize         = "/oauth/authorize"
	Consent           = "/oauth/consent"
	Token             = "/api/oauth/token"
	UserInfo          = "/api/oauth/userinfo"
	Revoke            = "/api/oauth/revoke"
	Introspect        = "/api/oauth/introspect"
	Register          = "/api/oauth/register"
	// Admin is the operator's admin area (Developers → OAuth
	// applications): same-origin HTML pages, no CORS.
	Admin             = "/oauth/admin"
	AdminApplications = Admin + "/applications"
	// AccountPages is the signed-in person's own pages, the gateway's:
	// the applications they connected (AccountApplications), which they
	// may disconnect. Same-origin HTML pages, no CORS, like the admin
	// area. Not the legacy site's Account API (AccountAPI).
	AccountPages        = "/oauth/account"
	AccountApplications = AccountPages + "/applications"
	// Assets are the files the gateway's own pages load (their
	// stylesheet), under names that change with their content.
	Assets = "/oauth/assets/"
)

// MCP is where the MCP server answers (also with a trailing slash).
const MCP = "/mcp"

// AccountAPI is the member Account API (GraphQL), a protected resource of
// the legacy site: the gateway checks the token and forwards the request.
// Not the person's pages of the gateway (AccountPages).
const AccountAPI = "/account/graphql"

// The documents generated from the site's configuration and catalog.
const (
	OpenAPI   = "/openapi.json"
	AuthGuide = "/auth.md"
	LLMs      = "/llms.txt"
	Pricing   = "/pricing.md"
)

// IsAuthServer reports whether a path belongs to the authorization
// server, either as an endpoint or inside a namespace it answers for
// (unknown paths there get a JSON 404 rather than the legacy site's
// pages).
func IsAuthServer(path string) bool {
	switch path {
	case JWKS, OIDCConfig, Authorize, Consent:
		return true
	}
	return IsAdmin(path) || IsAccountPages(path) || strings.HasPrefix(path, Assets) || strings.HasPrefix(path, "/.well-known/oauth-") ||
		strings.HasPrefix(path, "/api/oauth/") || path == "/api/oauth" ||
		strings.HasPrefix(path, OIDCConfig)
}

// IsAdmin reports whether a path belongs to the operator's admin area.
func IsAdmin(path string) bool {
	return path == Admin || strings.HasPrefix(path, Admin+"/")
}

// IsAccountPages reports whether a path belongs to the person's own
// pages (AccountPages).
func IsAccountPages(path string) bool {
	return path == AccountPages || strings.HasPrefix(path, AccountPages+"/")
}

// IsDocument reports whether a path is one of the generated documents.
func IsDocument(path string) bool {
	switch path {
	case OpenAPI, AuthGuide, LLMs, Pricing:
		return true
	}
	return false
}

// IsMCP reports whether a path is the MCP server's.
func IsMCP(path string) bool { return path == MCP || path == MCP+"/" }
