package sitedocs

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
)

// openAPIVersion is the OpenAPI release the document follows: clients are
// promised an OpenAPI 3.0 document.
const openAPIVersion = "3.0.3"

// obj is a JSON object that keeps its keys in the order they were added,
// so the document reads top-down (openapi, info, servers, paths, ...) and
// is byte-for-byte the same for the same site.
type obj []kv

type kv struct {
	k string
	v any
}

// MarshalJSON writes the members in order, without HTML escaping (the
// document is JSON served with nosniff, and "<ACCESS_TOKEN>" should read
// as such).
func (o obj) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(m.k); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		buf.WriteByte(':')
		if err := enc.Encode(m.v); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// add appends a member unless the key is already there (a configured admin
// prefix could collide with a fixed path; the first definition wins).
func (o *obj) add(k string, v any) {
	for _, m := range *o {
		if m.k == k {
			return
		}
	}
	*o = append(*o, kv{k, v})
}

func ref(kind, name string) obj { return obj{{"$ref", "#/components/" + kind + "/" + name}} }

func str(desc string) obj {
	if desc == "" {
		return obj{{"type", "string"}}
	}
	return obj{{"type", "string"}, {"description", desc}}
}

func strEnum(desc string, values ...string) obj {
	o := obj{{"type", "string"}, {"enum", values}}
	if desc != "" {
		o = append(o, kv{"description", desc})
	}
	return o
}

func jsonContent(schema any) obj {
	return obj{{"application/json", obj{{"schema", schema}}}}
}

func oauthScopes(scopes ...string) []obj { return []obj{{{"oauth2", scopes}}} }

// scopeDescriptions maps every scope to its one-line meaning for
// developers (policy.ScopeDescription words the same for the people on the
// consent page).
func scopeDescriptions(scopes []string) map[string]string {
	out := make(map[string]string, len(scopes))
	for _, sc := range scopes {
		out[sc] = scopeDescription(sc)
	}
	return out
}

// scopeDescription is the one-line meaning of a scope in the documents.
func scopeDescription(scope string) string {
	switch scope {
	case "openid":
		return "OpenID Connect sign-in: an ID token (when the discovery document lists the signing fields) and the UserInfo endpoint"
	case "profile":
		return "The member's basic profile: name, organization and roles"
	case "email":
		return "The member's e-mail address"
	case "account:read":
		return "Read the member's own account data: enrollments, course progress, orders and event registrations (member clients only)"
	case "account:write":
		return "Read and change the member's own account data (member clients only)"
	}
	area, access, ok := strings.Cut(scope, ":")
	if !ok {
		return "Scope " + scope
	}
	words := strings.ReplaceAll(area, "_", " ")
	switch access {
	case "read":
		return "Read access to " + words
	case "write":
		if !policy.WriteIncludesRead(scope) {
			return "Write access to " + words
		}
		return "Read and write access to " + words
	}
	return "Scope " + scope
}

// adminArea is one area of the operator admin API, derived from the scope
// table: <area>:read allows GET, <area>:write allows the writing methods.
type adminArea struct {
	Name        string
	Read, Write bool
}

// Words is the area's name as words: "membership plans".
func (a adminArea) Words() string { return strings.ReplaceAll(a.Name, "_", " ") }

// adminAreas lists the areas in the order their first scope appears.
func adminAreas(scopes []string) []adminArea {
	var out []adminArea
	index := map[string]int{}
	for _, sc := range scopes {
		area, access, ok := strings.Cut(sc, ":")
		if !ok || area == "" || area == "account" || strings.ContainsAny(area, "/{}?# ") {
			continue
		}
		i, seen := index[area]
		if !seen {
			i = len(out)
			index[area] = i
			out = append(out, adminArea{Name: area})
		}
		switch access {
		case "read":
			out[i].Read = true
		case "write":
			out[i].Write = true
		}
	}
	// An area whose scopes are neither read nor write gets no operations.
	kept := out[:0]
	for _, a := range out {
		if a.Read || a.Write {
			kept = append(kept, a)
		}
	}
	return kept
}

// isOperatorScope reports the scopes operator clients may hold: every
// scope except the member-only account scopes.
func isOperatorScope(scope string) bool {
	return scope != "account:read" && scope != "account:write"
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func renderOpenAPI(s Site) ([]byte, error) {
	var admin *adminDoc
	if len(s.AdminOpenAPI) > 0 && s.AdminPrefix != "" {
		var err error
		if admin, err = parseAdminOpenAPI(s.AdminOpenAPI, s); err != nil {
			return nil, err
		}
	}
	components := openAPIComponents(s)
	if admin != nil {
		components = admin.mergeComponents(components)
	}
	doc := obj{
		{"openapi", openAPIVersion},
		{"info", obj{
			{"title", s.SchoolName},
			{"version", "1.0.0"},
			{"description", "OAuth 2.0 / OpenID Connect authorization server, member Account API, MCP server " +
				"and operator admin API of " + escapeMarkdown(s.SchoolName) + ". This origin (" + s.Issuer +
				") is the issuer and the `resource` value (RFC 8707) of member tokens. The discovery documents under " +
				"`/.well-known/` are the source of truth for endpoints, grant types and scopes; where this document " +
				"disagrees with the authorization-server metadata, the metadata wins. Walkthrough: [auth.md](" +
				s.Issuer + sitepath.AuthGuide + ")."},
		}},
		{"servers", []obj{{{"url", s.Issuer}, {"description", "This school's origin: issuer and protected resource"}}}},
		{"tags", []obj{
			{{"name", "Discovery"}, {"description", "Metadata documents (no authentication)"}},
			{{"name", "OAuth"}, {"description", "Authorization server endpoints"}},
			{{"name", "Account"}, {"description", "Member Account API (member tokens only; no anonymous mode)"}},
			{{"name", "MCP"}, {"description", "MCP server over Streamable HTTP (anonymous or member)"}},
			{{"name", "Documents"}, {"description", "Machine-readable documents of this site"}},
			{{"name", "Admin"}, {"description", "Operator admin API, proxied to the school with the caller's identity. " +
				"Operator tokens only; GET needs `<area>:read`, POST, PUT, PATCH and DELETE need `<area>:write`. " +
				"Request and response bodies are the school's own."}},
		}},
		{"paths", openAPIPaths(s, admin)},
		{"components", components},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// openAPIPaths lists every operation; admin, when the school describes
// its admin API, replaces the generic operations of the areas it covers.
func openAPIPaths(s Site, admin *adminDoc) obj {
	var paths obj
	discovery := func(id, summary, what string) obj {
		return obj{{"get", obj{
			{"tags", []string{"Discovery"}},
			{"summary", summary},
			{"operationId", id},
			{"responses", obj{{"200", obj{{"description", what}, {"content", jsonContent(obj{{"type", "object"}})}}}}},
		}}}
	}
	paths.add(sitepath.ProtectedResource, discovery("getProtectedResourceMetadata",
		"Protected Resource Metadata (RFC 9728)",
		"The resource ("+s.Issuer+"), its authorization server and the scopes a member client requests"))
	paths.add(sitepath.ASMetadata, discovery("getAuthorizationServerMetadata",
		"Authorization Server Metadata (RFC 8414)",
		"Endpoints, grant types, scopes and client authentication methods"))
	paths.add(sitepath.OIDCConfig, discovery("getOpenIDConfiguration",
		"OpenID Connect Discovery",
		"The authorization server metadata plus OpenID Connect fields. `jwks_uri` and "+
			"`id_token_signing_alg_values_supported` appear only while an ID token can be signed; "+
			"without them, use UserInfo"))
	paths.add(sitepath.JWKS, obj{{"get", obj{
		{"tags", []string{"Discovery"}},
		{"summary", "JSON Web Key Set of the ID-token signing keys"},
		{"operationId", "getJWKS"},
		{"responses", obj{{"200", obj{{"description", "ES256 public keys, named by `kid`"},
			{"content", obj{{"application/jwk-set+json", obj{{"schema", obj{{"type", "object"}}}}}}}}}}},
	}}})

	paths.add(sitepath.Authorize, obj{{"get", obj{
		{"tags", []string{"OAuth"}},
		{"summary", "Authorization endpoint (Authorization Code with PKCE S256)"},
		{"description", "The user agent is sent here. A browser that is not signed in is sent to the site's login page " +
			"first. On approval the user is redirected to `redirect_uri` with `code`, `state` and `iss` (RFC 9207)."},
		{"operationId", "authorize"},
		{"parameters", []obj{
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
		}},
		{"responses", obj{
			{"302", obj{{"description", "Redirect to `redirect_uri` with `code`, `state` and `iss`, or with `error`, " +
				"`error_description`, `state` and `iss`; or to the login page when not signed in"},
				{"headers", obj{{"Location", obj{{"schema", obj{{"type", "string"}, {"format", "uri"}}}}}}}}},
			{"200", obj{{"description", "Consent page"}, {"content", obj{{"text/html", obj{}}}}}},
			{"400", obj{{"description", "Unknown client or unregistered redirect URI: an error page, never a redirect"},
				{"content", obj{{"text/html", obj{}}}}}},
		}},
	}}})

	paths.add(sitepath.Token, obj{{"post", obj{
		{"tags", []string{"OAuth"}},
		{"summary", "Token endpoint: exchange an authorization code or a refresh token"},
		{"description", "Public clients authenticate with `none` (only `client_id`), confidential clients with " +
			"`client_secret_post`. Refresh tokens rotate on every use; presenting a rotated one revokes the grant. " +
			"Refresh responses carry no `id_token`."},
		{"operationId", "token"},
		{"requestBody", obj{{"required", true},
			{"content", obj{{"application/x-www-form-urlencoded", obj{{"schema", ref("schemas", "TokenRequest")}}}}}}},
		{"responses", obj{
			{"200", obj{{"description", "Token response (RFC 6749 §5.1)"},
				{"headers", obj{{"Cache-Control", ref("headers", "NoStore")}}},
				{"content", jsonContent(ref("schemas", "TokenResponse"))}}},
			{"400", oauthErrorResponse("`invalid_request`, `invalid_grant`, `invalid_scope`, `invalid_target` (RFC 8707) and the other RFC 6749 §5.2 errors")},
			{"401", oauthErrorResponse("`invalid_client`")},
		}},
	}}})

	userinfo := func(method string) obj {
		return obj{
			{"tags", []string{"OAuth"}},
			{"summary", "OpenID Connect UserInfo"},
			{"description", "Returns the claims of section 2.2: `sub`, `email` (with the `email` scope), `name`, `org_id`, `roles`."},
			{"operationId", "userinfo" + method},
			{"security", oauthScopes("openid")},
			{"responses", obj{
				{"200", obj{{"description", "Claims of the token's subject"}, {"content", jsonContent(ref("schemas", "UserInfo"))}}},
				{"401", ref("responses", "InvalidToken")},
				{"403", ref("responses", "InsufficientScope")},
			}},
		}
	}
	paths.add(sitepath.UserInfo, obj{{"get", userinfo("Get")}, {"post", userinfo("Post")}})

	paths.add(sitepath.Revoke, obj{{"post", obj{
		{"tags", []string{"OAuth"}},
		{"summary", "Token revocation (RFC 7009)"},
		{"description", "Revokes an access or refresh token of the calling client. The answer is 200 whether or not the token was known."},
		{"operationId", "revoke"},
		{"requestBody", obj{{"required", true},
			{"content", obj{{"application/x-www-form-urlencoded", obj{{"schema", ref("schemas", "RevocationRequest")}}}}}}},
		{"responses", obj{
			{"200", obj{{"description", "Revoked (or unknown)"}}},
			{"400", oauthErrorResponse("`invalid_request`")},
			{"401", oauthErrorResponse("`invalid_client`")},
		}},
	}}})

	paths.add(sitepath.Introspect, obj{{"post", obj{
		{"tags", []string{"OAuth"}},
		{"summary", "Token introspection (RFC 7662)"},
		{"description", "A client sees its own tokens only; any other token is `{\"active\": false}`. `aud` shows the origin the token is bound to."},
		{"operationId", "introspect"},
		{"requestBody", obj{{"required", true},
			{"content", obj{{"application/x-www-form-urlencoded", obj{{"schema", ref("schemas", "IntrospectionRequest")}}}}}}},
		{"responses", obj{
			{"200", obj{{"description", "Token state"}, {"content", jsonContent(ref("schemas", "IntrospectionResponse"))}}},
			{"400", oauthErrorResponse("`invalid_request`")},
			{"401", oauthErrorResponse("`invalid_client`")},
		}},
	}}})

	paths.add(sitepath.Register, obj{{"post", obj{
		{"tags", []string{"OAuth"}},
		{"summary", "Dynamic client registration"},
		{"description", "Rules: a `client_name` of a known vendor integration returns that integration's `client_id` " +
			"(its redirect URIs must be among the vendor's); a client whose redirect URIs are all loopback " +
			"(`http://127.0.0.1:<port>/<path>`, `[::1]`, `localhost`) is accepted as an operator client, public " +
			"(`none`, the default) or, with `client_secret_post`, confidential with a new secret in the answer " +
			"(every such registration creates a client); an " +
			"unrecognized `client_name` is refused with `invalid_client_metadata`; a fixed https callback of an " +
			"unregistered integration is refused with `invalid_redirect_uri`. Clients that act for a member are " +
			"created by an operator in the admin area, not here."},
		{"operationId", "register"},
		{"requestBody", obj{{"required", true}, {"content", jsonContent(ref("schemas", "RegistrationRequest"))}}},
		{"responses", obj{
			{"201", obj{{"description", "Registered (or the existing client for the same request)"},
				{"content", jsonContent(ref("schemas", "RegistrationResponse"))}}},
			{"400", registrationErrors},
		}},
	}}})

	paths.add(sitepath.Account, obj{{"post", obj{
		{"tags", []string{"Account"}},
		{"summary", "Member Account API (GraphQL)"},
		{"description", "Reads the signed-in member's data: `viewer { id email enrolledCourses(first: N) { nodes { slug " +
			"expireDate hasLifetimeAccess lastWatchedLecture { lectureId positionSeconds } } } }`, and the member's orders " +
			"and event registrations. The token must carry `account:read` and be bound to " + s.Issuer +
			" (`resource`). There is no anonymous mode: a request without a token gets 401 `invalid_token`."},
		{"operationId", "accountGraphQL"},
		{"security", oauthScopes("account:read")},
		{"requestBody", obj{{"required", true}, {"content", obj{{"application/json", obj{
			{"schema", ref("schemas", "GraphQLRequest")},
			{"example", obj{{"query", exampleViewerQuery}}},
		}}}}}},
		{"responses", obj{
			{"200", obj{{"description", "GraphQL result"}, {"content", jsonContent(ref("schemas", "GraphQLResponse"))}}},
			{"401", ref("responses", "InvalidToken")},
			{"403", ref("responses", "InsufficientScope")},
		}},
	}}})

	paths.add(sitepath.MCP, obj{{"post", obj{
		{"tags", []string{"MCP"}},
		{"summary", "MCP server (Streamable HTTP, stateless)"},
		{"description", "JSON-RPC 2.0 messages of the Model Context Protocol. Without a token the request is served as " +
			"anonymous with the public catalog tools. A member token of this origin (the same one the Account API " +
			"accepts) adds the member tools. A token that is not valid here gets 401 `invalid_token`; it is never " +
			"served as anonymous."},
		{"operationId", "mcp"},
		{"security", []obj{{}, {{"oauth2", []string{"account:read"}}}}},
		{"requestBody", obj{{"required", true}, {"content", jsonContent(ref("schemas", "JSONRPCMessage"))}}},
		{"responses", obj{
			{"200", obj{{"description", "JSON-RPC response, as JSON or as a server-sent event stream"},
				{"content", obj{
					{"application/json", obj{{"schema", ref("schemas", "JSONRPCMessage")}}},
					{"text/event-stream", obj{{"schema", obj{{"type", "string"}}}}},
				}}}},
			{"202", obj{{"description", "Notification or response accepted"}}},
			{"401", ref("responses", "InvalidToken")},
			{"403", obj{{"description", "Origin or Host not allowed (DNS-rebinding protection)"}}},
		}},
	}}})

	for _, d := range []struct{ path, id, summary, ctype string }{
		{sitepath.OpenAPI, "getOpenAPI", "This OpenAPI document", typeJSON},
		{sitepath.AuthGuide, "getAuthGuide", "Authentication walkthrough for this site (Markdown)", typeMarkdown},
		{sitepath.LLMs, "getLLMsTxt", "Content index for agents (llmstxt.org format)", typeText},
		{sitepath.Pricing, "getPricing", "What the site sells, with prices (Markdown)", typeMarkdown},
	} {
		paths.add(d.path, obj{{"get", obj{
			{"tags", []string{"Documents"}},
			{"summary", d.summary},
			{"operationId", d.id},
			{"parameters", []obj{{{"name", "If-None-Match"}, {"in", "header"}, {"required", false},
				{"schema", obj{{"type", "string"}}}, {"description", "An ETag from an earlier response"}}}},
			{"responses", obj{
				{"200", obj{{"description", "The document"},
					{"headers", obj{{"ETag", ref("headers", "ETag")}, {"Cache-Control", ref("headers", "PublicCache")}}},
					{"content", obj{{d.ctype, obj{{"schema", obj{{"type", "string"}}}}}}}}},
				{"304", obj{{"description", "Not modified"}, {"headers", obj{{"ETag", ref("headers", "ETag")}}}}},
			}},
		}}})
	}

	if s.AdminPrefix != "" {
		var described obj
		covered := map[string]bool{}
		if admin != nil {
			described, covered = admin.adminPaths(s)
		}
		for _, a := range adminAreas(s.Scopes) {
			if covered[a.Name] || covered[strings.ReplaceAll(a.Name, "_", "-")] {
				continue
			}
			base := s.AdminPrefix + "/" + a.Name
			paths.add(base, adminOperations(a, false))
			paths.add(base+"/{path}", adminOperations(a, true))
		}
		for _, m := range described {
			paths.add(m.k, m.v)
		}
	}
	return paths
}

// registrationErrors is the registration endpoint's 400 answer, with an
// example of each refusal registration makes.
var registrationErrors = obj{
	{"description", "`invalid_client_metadata` or `invalid_redirect_uri`"},
	{"content", obj{{"application/json", obj{
		{"schema", ref("schemas", "OAuthError")},
		{"examples", obj{
			{"invalid_client_metadata", obj{{"value", obj{
				{"error", "invalid_client_metadata"},
				{"error_description", "client_name is not a known integration"},
			}}}},
			{"invalid_redirect_uri", obj{{"value", obj{
				{"error", "invalid_redirect_uri"},
				{"error_description", "a fixed https callback needs a registered integration; ask the school operator for a client_id"},
			}}}},
		}},
	}}}},
}

func queryParam(name string, required bool, schema obj) obj {
	o := obj{{"name", name}, {"in", "query"}, {"required", required}}
	for _, m := range schema {
		if m.k == "description" {
			o = append(o, kv{"description", m.v})
		}
	}
	return append(o, kv{"schema", schema})
}

func oauthErrorResponse(desc string) obj {
	return obj{{"description", desc}, {"content", jsonContent(ref("schemas", "OAuthError"))}}
}

// adminOperations are the operations of one admin area, on its collection
// path or on any path below it. Reads need <area>:read, the rest
// <area>:write, as the gateway enforces. What is common to every operation
// is said once, on the path item and the Admin tag.
func adminOperations(a adminArea, item bool) obj {
	suffix, where := "", "the "+a.Words()+" area"
	if item {
		suffix, where = "Item", "a resource below the "+a.Words()+" area"
	}
	ops := obj{
		{"summary", "Admin API: " + where},
		{"description", "Proxied to the school's admin API with the caller's identity; request and response " +
			"bodies are the school's own. Reads need `" + a.Name + ":read`, writes `" + a.Name + ":write`."},
	}
	if item {
		ops = append(ops, kv{"parameters", []obj{ref("parameters", "AdminPath")}})
	}
	op := func(method, verb, scope string, body bool) obj {
		o := obj{
			{"tags", []string{"Admin"}},
			{"summary", verb + " (" + scope + ")"},
			{"operationId", "admin_" + a.Name + suffix + "_" + method},
			{"security", oauthScopes(scope)},
		}
		if body {
			o = append(o, kv{"requestBody", ref("requestBodies", "AdminBody")})
		}
		return append(o, kv{"responses", obj{
			{"200", ref("responses", "AdminResult")},
			{"401", ref("responses", "InvalidToken")},
			{"403", ref("responses", "InsufficientScope")},
		}})
	}
	if a.Read {
		ops = append(ops, kv{"get", op("get", "Read", a.Name+":read", false)})
	}
	if a.Write {
		w := a.Name + ":write"
		ops = append(ops,
			kv{"post", op("post", "Create or act", w, true)},
			kv{"put", op("put", "Replace", w, true)},
			kv{"patch", op("patch", "Update", w, true)},
			kv{"delete", op("delete", "Delete", w, false)},
		)
	}
	return ops
}

func openAPIComponents(s Site) obj {
	scopes := obj{}
	desc := scopeDescriptions(s.Scopes)
	for _, sc := range dedupe(s.Scopes) {
		scopes = append(scopes, kv{sc, desc[sc]})
	}
	metadata := s.Issuer + sitepath.ProtectedResource
	return obj{
		{"securitySchemes", obj{
			{"oauth2", obj{
				{"type", "oauth2"},
				{"description", "Authorization Code with PKCE (S256 only). Member clients request `" +
					strings.Join(s.ProtectedResourceScopes, " ") + "` with `resource=" + s.Issuer +
					"`; operator clients request operator scopes (every scope except `account:read` and " +
					"`account:write`). Tokens are sent as `Authorization: Bearer <ACCESS_TOKEN>`."},
				{"flows", obj{{"authorizationCode", obj{
					{"authorizationUrl", s.Issuer + sitepath.Authorize},
					{"tokenUrl", s.Issuer + sitepath.Token},
					{"refreshUrl", s.Issuer + sitepath.Token},
					{"scopes", scopes},
				}}}},
			}},
			{"openIdConnect", obj{
				{"type", "openIdConnect"},
				{"description", "OpenID Connect Discovery of this issuer"},
				{"openIdConnectUrl", s.Issuer + sitepath.OIDCConfig},
			}},
		}},
		{"schemas", openAPISchemas(s)},
		{"responses", obj{
			{"InvalidToken", obj{
				{"description", "`invalid_token`: no token where one is required, or an invalid, expired, revoked or " +
					"malformed token, or one issued for a different origin"},
				{"headers", obj{{"WWW-Authenticate", ref("headers", "WWWAuthenticate")}}},
				{"content", jsonContent(ref("schemas", "OAuthError"))},
			}},
			{"InsufficientScope", obj{
				{"description", "`insufficient_scope`: a valid token lacking a required scope (or of the wrong audience)"},
				{"headers", obj{{"WWW-Authenticate", ref("headers", "WWWAuthenticate")}}},
				{"content", jsonContent(ref("schemas", "OAuthError"))},
			}},
			{"AdminResult", obj{
				{"description", "The school's own response"},
				{"content", obj{{"*/*", obj{{"schema", obj{}}}}}},
			}},
		}},
		{"parameters", obj{
			{"AdminPath", obj{{"name", "path"}, {"in", "path"}, {"required", true},
				{"description", "Path below the area, e.g. a resource id; its meaning is the school's own"},
				{"schema", obj{{"type", "string"}}}}},
		}},
		{"requestBodies", obj{
			{"AdminBody", obj{{"required", false}, {"description", "The school's own request body"},
				{"content", obj{{"*/*", obj{{"schema", obj{}}}}}}}},
		}},
		{"headers", obj{
			{"WWWAuthenticate", obj{
				{"description", "RFC 6750 Bearer challenge pointing at the protected-resource metadata: " +
					"`Bearer error=\"...\", error_description=\"...\", resource_metadata=\"" + metadata +
					"\"`, plus `scope=\"...\"` on `insufficient_scope`"},
				{"schema", obj{{"type", "string"}}},
			}},
			{"NoStore", obj{{"description", "`no-store`"}, {"schema", obj{{"type", "string"}}}}},
			{"ETag", obj{{"description", "Strong entity tag of the body"}, {"schema", obj{{"type", "string"}}}}},
			{"PublicCache", obj{{"description", "`public, max-age=300`"}, {"schema", obj{{"type", "string"}}}}},
		}},
	}
}

func object(required []string, props obj) obj {
	o := obj{{"type", "object"}}
	if len(required) > 0 {
		o = append(o, kv{"required", required})
	}
	return append(o, kv{"properties", props})
}

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
			{"grant_type", strEnum("Grant type", "authorization_code", "refresh_token")},
			{"code", str("authorization_code: the authorization code")},
			{"redirect_uri", str("authorization_code: the same value as at authorization")},
			{"client_id", str("The client's id (both grants)")},
			{"code_verifier", str("authorization_code: the PKCE verifier")},
			{"resource", str("authorization_code: " + s.Issuer + "; required for member tokens")},
			{"client_secret", str("Confidential clients (`client_secret_post`)")},
			{"refresh_token", str("refresh_token: the refresh token")},
		})},
		{"TokenResponse", object([]string{"access_token", "token_type"}, obj{
			{"access_token", str("Opaque bearer token")},
			{"token_type", strEnum("Always Bearer", "Bearer")},
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
			{"token_type", str("`Bearer` or `refresh_token`")},
			{"audience_type", strEnum("Who the token acts for", "member", "operator")},
		})},
		{"RegistrationRequest", object([]string{"redirect_uris"}, obj{
			{"client_name", str("Matched against the known vendor integrations")},
			{"application_type", str("e.g. `native`")},
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
			{"scope", str("Scopes the client may request")},
			{"client_id_issued_at", integer("")},
			{"client_secret", str("Only for a client registered with `client_secret_post`, and only in this answer")},
			{"client_secret_expires_at", integer("`0` (the secret does not expire); with `client_secret` only")},
			{"application_type", str("")},
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
