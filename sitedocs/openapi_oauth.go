package sitedocs

import (
	"github.com/schoolgate/schoolgate/sitepath"
)

// authServerPaths are the authorization server's endpoints the documents
// list, in its order; discoveryOperations and oauthOperations say what
// each does.
func authServerPaths(s Site) obj {
	ops := append(discoveryOperations(s), oauthOperations(s)...)
	var paths obj
	for _, e := range listedEndpoints(s.Endpoints) {
		if op, ok := ops.get(e.Path); ok {
			paths = paths.with(e.Path, op)
		}
	}
	return paths
}

// listedEndpoints are the authorization server's endpoints that the
// documents list: those with a title.
func listedEndpoints(all []Endpoint) []Endpoint {
	var out []Endpoint
	for _, e := range all {
		if e.Title != "" {
			out = append(out, e)
		}
	}
	return out
}

// discoveryOperations are the metadata documents and the key set.
func discoveryOperations(s Site) obj {
	discovery := func(id, summary, what string) obj {
		return onGet(operation{tag: "Discovery", summary: summary, id: id,
			responses: obj{{"200", response(what).with("content", jsonContent(anyObject()))}}})
	}
	return obj{
		{sitepath.ProtectedResource, discovery("getProtectedResourceMetadata",
			"Protected Resource Metadata (RFC 9728)",
			"The resource ("+s.Issuer+"), its authorization server and the scopes a member client requests")},
		{sitepath.ASMetadata, discovery("getAuthorizationServerMetadata",
			"Authorization Server Metadata (RFC 8414)",
			"Endpoints, grant types, scopes and client authentication methods")},
		{sitepath.OIDCConfig, discovery("getOpenIDConfiguration",
			"OpenID Connect Discovery",
			"The authorization server metadata plus OpenID Connect fields. `jwks_uri` and "+
				"`id_token_signing_alg_values_supported` appear only while an ID token can be signed; "+
				"without them, use UserInfo")},
		{sitepath.JWKS, onGet(operation{tag: "Discovery", id: "getJWKS",
			summary: "JSON Web Key Set of the ID-token signing keys",
			responses: obj{{"200", response("ES256 public keys, named by `kid`").
				with("content", content("application/jwk-set+json", anyObject()))}}})},
	}
}

// tokenDPoPWords say what the token endpoint does with a DPoP proof.
func tokenDPoPWords(s Site) string {
	if !s.DPoPOn() {
		return ""
	}
	w := " With a `DPoP` proof (RFC 9449) the access token is bound to the proof's key (`token_type` `DPoP`), " +
		"and so is a public client's refresh token, which then refreshes only with a proof of that key."
	if s.DPoPRequired() {
		w += " This school issues DPoP-bound tokens only: a request without a proof is refused with `invalid_dpop_proof`."
	}
	if s.DPoPNonce {
		w += " Every proof carries the school's nonce: a proof without it, or with a stale one, gets `use_dpop_nonce` " +
			"and the nonce to use in the `DPoP-Nonce` header."
	}
	return w
}

func tokenDPoPErrors(s Site) string {
	if !s.DPoPOn() {
		return ""
	}
	return ", `invalid_dpop_proof`, `use_dpop_nonce` (RFC 9449)"
}

func tokenHeaders(s Site) obj {
	h := obj{{"Cache-Control", ref("headers", "NoStore")}}
	if s.DPoPOn() && s.DPoPNonce {
		h = h.with("DPoP-Nonce", ref("headers", "DPoPNonce"))
	}
	return h
}

// oauthOperations are the authorization server's other endpoints.
func oauthOperations(s Site) obj {
	userinfo := func(method string) obj {
		return operation{tag: "OAuth", summary: "OpenID Connect UserInfo", id: "userinfo" + method,
			description: "Returns the claims of section 2.2: `sub`, `email` (with the `email` scope), `name`, `org_id`, `roles`.",
			security:    oauthScopes("openid"),
			parameters:  dpopParams(s),
			responses:   protectedResponses(jsonResponse("Claims of the token's subject", "UserInfo")),
		}.obj()
	}
	return obj{
		{sitepath.Authorize, onGet(authorizeOperation(s))},
		{sitepath.Token, onPost(operation{tag: "OAuth", id: "token",
			summary: "Token endpoint: exchange an authorization code or a refresh token",
			description: "Public clients authenticate with `none` (only `client_id`), confidential clients with " +
				"`client_secret_post`. Refresh tokens rotate on every use; presenting a rotated one revokes the grant. " +
				"Refresh responses carry no `id_token`." + tokenDPoPWords(s),
			parameters:  dpopParams(s),
			requestBody: formBody("TokenRequest"),
			responses: obj{
				{"200", response("Token response (RFC 6749 §5.1)").
					with("headers", tokenHeaders(s)).
					with("content", jsonContent(schemaRef("TokenResponse")))},
				{"400", oauthErrorResponse("`invalid_request`, `invalid_grant`, `invalid_scope`, `invalid_target` (RFC 8707)" +
					tokenDPoPErrors(s) + " and the other RFC 6749 §5.2 errors")},
				{"401", oauthErrorResponse("`invalid_client`")},
			},
		})},
		{sitepath.UserInfo, obj{{"get", userinfo("Get")}, {"post", userinfo("Post")}}},
		{sitepath.Revoke, onPost(operation{tag: "OAuth", id: "revoke",
			summary:     "Token revocation (RFC 7009)",
			description: "Revokes an access or refresh token of the calling client. The answer is 200 whether or not the token was known.",
			requestBody: formBody("RevocationRequest"),
			responses: obj{
				{"200", response("Revoked (or unknown)")},
				{"400", oauthErrorResponse("`invalid_request`")},
				{"401", oauthErrorResponse("`invalid_client`")},
			},
		})},
		{sitepath.Introspect, onPost(operation{tag: "OAuth", id: "introspect",
			summary:     "Token introspection (RFC 7662)",
			description: "A client sees its own tokens only; any other token is `{\"active\": false}`. `aud` shows the origin the token is bound to.",
			requestBody: formBody("IntrospectionRequest"),
			responses: obj{
				{"200", jsonResponse("Token state", "IntrospectionResponse")},
				{"400", oauthErrorResponse("`invalid_request`")},
				{"401", oauthErrorResponse("`invalid_client`")},
			},
		})},
		{sitepath.Register, onPost(operation{tag: "OAuth", id: "register",
			summary: "Dynamic client registration",
			description: "Rules: a `client_name` of a known vendor integration returns that integration's `client_id` " +
				"(its redirect URIs must be among the vendor's); a client whose redirect URIs are all loopback " +
				"(`http://127.0.0.1:<port>/<path>`, `[::1]`, `localhost`) is accepted as an operator client, public " +
				"(`none`, the default) or, with `client_secret_post`, confidential with a new secret in the answer " +
				"(every such registration creates a client); an " +
				"unrecognized `client_name` is refused with `invalid_client_metadata`; a fixed https callback of an " +
				"unregistered integration is refused with `invalid_redirect_uri`. Clients that act for a member are " +
				"created by an operator in the admin area, not here.",
			requestBody: jsonBody("RegistrationRequest"),
			responses: obj{
				{"201", jsonResponse("Registered (or the existing client for the same request)", "RegistrationResponse")},
				{"400", registrationErrors()},
			},
		})},
	}
}

func authorizeOperation(s Site) operation {
	op := operation{tag: "OAuth", id: "authorize",
		summary: "Authorization endpoint (Authorization Code with PKCE S256)",
		description: "The user agent is sent here. A browser that is not signed in is sent to the site's login page " +
			"first. On approval the user is redirected to `redirect_uri` with `code`, `state` and `iss` (RFC 9207).",
		parameters: []obj{
			queryParam("response_type", true, strEnum("Always `code`", "code")),
			queryParam("client_id", true, str("Registered client id, or the https URL of a Client ID Metadata Document")),
			queryParam("redirect_uri", true, str("Must be registered for the client")),
			queryParam("scope", true, str("Space-separated scopes")),
			queryParam("resource", false, obj{{"type", "string"}, {"format", "uri"},
				{"description", "RFC 8707 resource indicator, required for member tokens: " + s.Issuer +
					" (repeat it at the token endpoint)"}, {"example", s.Issuer}}),
			queryParam("code_challenge", true, str("PKCE challenge: BASE64URL(SHA-256(code_verifier))")),
			queryParam("code_challenge_method", true, strEnum("Always `S256`", "S256")),
			queryParam("state", false, str("Opaque value echoed on the redirect (recommended)")),
			queryParam("nonce", false, str("Echoed in the `id_token` when sent")),
			queryParam("prompt", false, str("`none`: no page, `login_required` or `consent_required` instead; "+
				"`consent`: always the consent page. A remembered approval skips the page only when the redirect "+
				"URI proves the client (https, registered or on the metadata document's host), never for loopback")),
		},
		responses: obj{
			{"302", response("Redirect to `redirect_uri` with `code`, `state` and `iss`, or with `error`, "+
				"`error_description`, `state` and `iss`; or to the login page when not signed in").
				with("headers", obj{{"Location", obj{{"schema", obj{{"type", "string"}, {"format", "uri"}}}}}})},
			{"200", htmlPage("Consent page")},
			{"400", htmlPage("Unknown client or unregistered redirect URI: an error page, never a redirect")},
		},
	}
	if s.DPoPOn() {
		op.parameters = append(op.parameters, queryParam("dpop_jkt", false,
			str("RFC 9449 §10: the base64url SHA-256 JWK thumbprint of the client's DPoP key; the code is then "+
				"redeemed only with a DPoP proof of that key")))
	}
	return op
}

// registrationErrors is the registration endpoint's 400 answer, with an
// example of each refusal registration makes.
func registrationErrors() obj {
	example := func(code, desc string) obj {
		return obj{{"value", obj{{"error", code}, {"error_description", desc}}}}
	}
	return response("`invalid_client_metadata` or `invalid_redirect_uri`").with("content", obj{{"application/json", obj{
		{"schema", schemaRef("OAuthError")},
		{"examples", obj{
			{"invalid_client_metadata", example("invalid_client_metadata", "client_name is not a known integration")},
			{"invalid_redirect_uri", example("invalid_redirect_uri",
				"a fixed https callback needs a registered integration; ask the school operator for a client_id")},
		}},
	}}})
}
