package sitedocs

import (
	"github.com/schoolgate/schoolgate/policy"
)

// tokenType is the token response's token_type: Bearer, and DPoP where
// the school takes DPoP.
func tokenType(s Site) obj {
	switch {
	case !s.DPoPOn():
		return strEnum("Always Bearer", "Bearer")
	case s.DPoPRequired():
		return strEnum("Always DPoP: this school issues DPoP-bound tokens only", "DPoP")
	}
	return strEnum("`DPoP` when the token request carried a DPoP proof (the token is bound to its key), else `Bearer`",
		"Bearer", "DPoP")
}

// openAPISchemas are the request and response bodies of the operations.
func openAPISchemas(s Site) obj {
	strArray := func(desc string) obj {
		return obj{{"type", "array"}, {"items", obj{{"type", "string"}}}, {"description", desc}}
	}
	integer := func(desc string) obj { return obj{{"type", "integer"}, {"description", desc}} }
	return obj{
		{"OAuthError", object([]string{"error"}, obj{
			{"error", str("`invalid_request`, `invalid_grant`, `invalid_client`, `invalid_scope`, " +
				"`invalid_client_metadata`, `invalid_redirect_uri`, `invalid_token`, `insufficient_scope`, ...")},
			{"error_description", str("Human-readable explanation")},
		})},
		{"TokenRequest", object([]string{"grant_type", "client_id"}, obj{
			{"grant_type", strEnum("Grant type", s.GrantTypes...)},
			{"code", str("authorization_code: the authorization code")},
			{"redirect_uri", str("authorization_code: the same value as at authorization")},
			{"client_id", str("The client's id (both grants)")},
			{"code_verifier", str("authorization_code: the PKCE verifier")},
			{"resource", str("authorization_code: " + s.Issuer + "; required for member tokens")},
			{"client_secret", str("Confidential clients (`client_secret_post`)")},
			{"refresh_token", str("refresh_token: the refresh token")},
		})},
		{"TokenResponse", object([]string{"access_token", "token_type"}, obj{
			{"access_token", str("Opaque access token")},
			{"token_type", tokenType(s)},
			{"expires_in", integer("Lifetime of the access token in seconds")},
			{"scope", str("Granted scopes, space-separated")},
			{"refresh_token", str("Refresh token; a new one on every refresh (rotation)")},
			{"id_token", str("ES256-signed ID token, only on the code exchange, when `openid` was requested and " +
				"the discovery document lists `id_token_signing_alg_values_supported` and `jwks_uri`; valid 10 minutes")},
		})},
		{"UserInfo", object([]string{"sub"}, obj{
			{"sub", str("Subject")},
			{"email", str("E-mail address")},
			{"name", str("Name")},
			{"org_id", str("Organization identifier")},
			{"roles", strArray("Roles at the site")},
		})},
		{"RevocationRequest", object([]string{"token", "client_id"}, obj{
			{"token", str("Access or refresh token")},
			{"client_id", str("The client's id")},
			{"client_secret", str("Confidential clients")},
		})},
		{"IntrospectionRequest", object([]string{"token", "client_id"}, obj{
			{"token", str("Access or refresh token")},
			{"client_id", str("The client's id")},
			{"client_secret", str("Confidential clients")},
		})},
		{"IntrospectionResponse", object([]string{"active"}, obj{
			{"active", obj{{"type", "boolean"}}},
			{"scope", str("Space-separated scopes")},
			{"client_id", str("")},
			{"sub", str("")},
			{"aud", str("The resource (origin) the token is bound to")},
			{"iss", str("")},
			{"exp", integer("Expiry, seconds since the epoch")},
			{"iat", integer("Issue time, seconds since the epoch")},
			{"token_type", str("`Bearer`, `DPoP` (an access token bound to a DPoP key) or `refresh_token`")},
			{"audience_type", strEnum("Who the token acts for", policy.AudienceMember, policy.AudienceOperator)},
			{"cnf", object([]string{"jkt"}, obj{{"jkt", str("RFC 9449 §6.2: the base64url SHA-256 thumbprint of the DPoP key the token is bound to")}}).
				with("description", "Present for a token bound to a DPoP key")},
		})},
		{"RegistrationRequest", object([]string{"redirect_uris"}, obj{
			{"client_name", str("Matched against the known vendor integrations")},
			{"application_type", strEnum("OpenID Connect Dynamic Client Registration: `native` for loopback redirect URIs, "+
				"`web` for others; left out, a loopback client registers as `native`", "native", "web")},
			{"redirect_uris", strArray("Redirect URIs")},
			{"token_endpoint_auth_method", strEnum("`none` for public clients, `client_secret_post` for confidential ones",
				"none", "client_secret_post")},
			{"grant_types", strArray("`authorization_code`, `refresh_token`")},
			{"response_types", strArray("`code`")},
		})},
		{"RegistrationResponse", append(object([]string{"client_id"}, obj{
			{"client_id", str("The client id to use")},
			{"client_name", str("")},
			{"redirect_uris", strArray("")},
			{"token_endpoint_auth_method", str("")},
			{"grant_types", strArray("")},
			{"response_types", strArray("")},
			{"scope", str("Scopes the client may request, `offline_access` among them")},
			{"client_id_issued_at", integer("")},
			{"client_secret", str("Only for a client registered with `client_secret_post`, and only in this answer")},
			{"client_secret_expires_at", integer("`0` (the secret does not expire); with `client_secret` only")},
			{"application_type", str("`native` for a loopback client")},
		}), kv{"additionalProperties", true})},
		{"GraphQLRequest", object([]string{"query"}, obj{
			{"query", str("GraphQL document")},
			{"variables", obj{{"type", "object"}, {"additionalProperties", true}}},
			{"operationName", str("")},
		})},
		{"GraphQLResponse", object(nil, obj{
			{"data", obj{{"type", "object"}, {"nullable", true}}},
			{"errors", obj{{"type", "array"}, {"items", obj{{"type", "object"}}}}},
		})},
		{"JSONRPCMessage", append(object([]string{"jsonrpc"}, obj{
			{"jsonrpc", strEnum("", "2.0")},
			{"id", obj{{"description", "String or number; absent on notifications"}}},
			{"method", str("e.g. `initialize`, `tools/list`, `tools/call`")},
			{"params", obj{{"type", "object"}}},
			{"result", obj{{"type", "object"}}},
			{"error", obj{{"type", "object"}}},
		}), kv{"additionalProperties", true})},
	}
}
