package sitepath

import "testing"

func TestOwners(t *testing.T) {
	tests := []struct {
		path              string
		authServer, admin bool
		mcp               bool
	}{
		{ProtectedResource, true, false, false},
		{ProtectedResource + "/mcp", true, false, false},
		{"/.well-known/oauth-anything", true, false, false},
		{ASMetadata, true, false, false},
		{OIDCConfig, true, false, false},
		{OIDCConfig + "/x", true, false, false},
		{JWKS, true, false, false},
		{Authorize, true, false, false},
		{Consent, true, false, false},
		{Token, true, false, false},
		{"/api/oauth", true, false, false},
		{"/api/oauth/unknown", true, false, false},
		{Admin, true, true, false},
		{Admin + "/", true, true, false},
		{AdminApplications, true, true, false},
		{AdminApplications + "/review", true, true, false},
		{AccountPages, true, false, false},
		{AccountApplications, true, false, false},
		{AccountApplications + "/disconnect", true, false, false},
		{"/oauth/accounts", false, false, false},
		{Assets + "pages-0123456789ab.css", true, false, false},
		{Assets + "unknown", true, false, false},
		{"/oauth/assets", false, false, false},
		{"/oauth/administrator", false, false, false},
		{"/oauth/adminx/y", false, false, false},
		{"/oauth", false, false, false},
		{"/oauth/other", false, false, false},
		{"/.well-known/security.txt", false, false, false},
		{"/api/oauthx", false, false, false},
		{MCP, false, false, true},
		{MCP + "/", false, false, true},
		{"/mcp/x", false, false, false},
		{"/mcpx", false, false, false},
		{AccountAPI, false, false, false},
		{OpenAPI, false, false, false},
		{"/", false, false, false},
	}
	for _, tc := range tests {
		if got := IsAuthServer(tc.path); got != tc.authServer {
			t.Errorf("IsAuthServer(%q) = %v", tc.path, got)
		}
		if got := IsAdmin(tc.path); got != tc.admin {
			t.Errorf("IsAdmin(%q) = %v", tc.path, got)
		}
		if got := IsMCP(tc.path); got != tc.mcp {
			t.Errorf("IsMCP(%q) = %v", tc.path, got)
		}
	}
}

// The two accounts are told apart by their names: the legacy site's
// Account API, which the gateway protects, and the person's pages, which
// it serves.
func TestAccounts(t *testing.T) {
	for _, tc := range []struct {
		name, path, want string
		pages            bool
	}{
		{"AccountAPI", AccountAPI, "/account/graphql", false},
		{"AccountPages", AccountPages, "/oauth/account", true},
		{"AccountApplications", AccountApplications, "/oauth/account/applications", true},
	} {
		if tc.path != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.path, tc.want)
		}
		if got := IsAccountPages(tc.path); got != tc.pages {
			t.Errorf("IsAccountPages(%s) = %v", tc.name, got)
		}
	}
}
