package authserver

import "strings"

// Paths the authorization server owns on the site origin.
const (
	PathProtectedResource = "/.well-known/oauth-protected-resource"
	PathASMetadata        = "/.well-known/oauth-authorization-server"
	PathOIDCConfig        = "/.well-known/openid-configuration"
	PathJWKS              = "/.well-known/jwks.json"
	PathAuthorize         = "/oauth/authorize"
	PathConsent           = "/oauth/consent"
	PathToken             = "/api/oauth/token"
	PathUserInfo          = "/api/oauth/userinfo"
	PathRevoke            = "/api/oauth/revoke"
	PathIntrospect        = "/api/oauth/introspect"
	PathRegister          = "/api/oauth/register"
	// PathAdmin is the operator's admin area (Developers → OAuth
	// applications): same-origin HTML pages, no CORS.
	PathAdmin             = "/oauth/admin"
	PathAdminApplications = PathAdmin + "/applications"
)

// Owns reports whether a path belongs to the authorization server, either
// as an endpoint or inside a namespace it answers for (unknown paths there
// get a JSON 404 rather than the legacy site's pages).
func Owns(path string) bool {
	switch path {
	case PathJWKS, PathOIDCConfig, PathAuthorize, PathConsent:
		return true
	}
	return isAdminPath(path) || strings.HasPrefix(path, "/.well-known/oauth-") ||
		strings.HasPrefix(path, "/api/oauth/") || path == "/api/oauth" ||
		strings.HasPrefix(path, "/.well-known/openid-configuration")
}
