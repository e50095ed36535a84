package sitedocs

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/schoolgate/schoolgate/sitepath"
)

// mdWriter collects a Markdown document line by line.
type mdWriter struct{ b strings.Builder }

func (m *mdWriter) line(format string, args ...any) {
	if len(args) == 0 {
		m.b.WriteString(format)
	} else {
		fmt.Fprintf(&m.b, format, args...)
	}
	m.b.WriteByte('\n')
}

// raw writes s as one line, verbatim.
func (m *mdWriter) raw(s string) {
	m.b.WriteString(s)
	m.b.WriteByte('\n')
}

func (m *mdWriter) blank() { m.b.WriteByte('\n') }

// code writes a fenced code block.
func (m *mdWriter) code(lang string, lines ...string) {
	m.raw("```" + lang)
	for _, l := range lines {
		m.raw(l)
	}
	m.line("```")
	m.blank()
}

func (m *mdWriter) String() string { return m.b.String() }

// shellQuote quotes s for a POSIX shell in the examples.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// renderAuth writes /auth.md: the walkthrough with this site's real URLs.
func renderAuth(s Site) string {
	u := func(path string) string { return s.Issuer + path }
	memberScopes := strings.Join(s.ProtectedResourceScopes, " ")
	var m mdWriter

	m.line("# Authentication at %s", escapeMarkdown(s.SchoolName))
	m.blank()
	m.line("This site, <%s>, is one school of a course-school platform. The same origin is the OAuth 2.0 "+
		"authorization server and OpenID Provider (issuer `%s`) and the protected resource (the RFC 8707 "+
		"`resource` value of member tokens is `%s`). Its HTTP API is secured with OAuth 2.0 Authorization Code "+
		"with PKCE; `code_challenge_method` is always `S256`.", s.Issuer, s.Issuer, s.Issuer)
	m.blank()
	m.line("The discovery documents are the source of truth for endpoints, grant types and scopes. Where this "+
		"page disagrees with the authorization-server metadata, the metadata wins. The machine-readable API "+
		"description is [openapi.json](%s).", u(sitepath.OpenAPI))
	m.blank()
	m.line("The WorkOS-style `agent_auth` extension (`identity_assertion` via ID-JAG, `service_auth`, anonymous " +
		"claim ceremony) is not supported: do not attempt it or call an `identity_endpoint` or `register_uri` for it.")
	m.blank()

	m.line("## Endpoints")
	m.blank()
	m.line("| What | URL |")
	m.line("|---|---|")
	for _, row := range [][2]string{
		{"Protected resource metadata (RFC 9728)", u(sitepath.ProtectedResource)},
		{"Authorization server metadata (RFC 8414)", u(sitepath.ASMetadata)},
		{"OpenID Connect discovery", u(sitepath.OIDCConfig)},
		{"JSON Web Key Set (ID-token keys)", u(sitepath.JWKS)},
		{"Authorization", u(sitepath.Authorize)},
		{"Token", u(sitepath.Token)},
		{"UserInfo", u(sitepath.UserInfo)},
		{"Revocation (RFC 7009)", u(sitepath.Revoke)},
		{"Introspection (RFC 7662)", u(sitepath.Introspect)},
		{"Client registration", u(sitepath.Register)},
		{"Member Account API (GraphQL)", u(sitepath.Account)},
		{"MCP server (Streamable HTTP)", u(sitepath.MCP)},
	} {
		m.line("| %s | `%s` |", row[0], row[1])
	}
	if s.AdminPrefix != "" {
		m.line("| Operator admin API | `%s/<area>/...` |", u(s.AdminPrefix))
	}
	m.blank()

	m.line("## Two kinds of client")
	m.blank()
	m.line("- **Member clients** act for one signed-in member of this site. They read that person's enrollments, "+
		"progress, orders and event registrations through `%s` and `%s`. They request `%s` and send "+
		"`resource=%s`; the token is bound to this origin and reads one person's data at this site only.",
		sitepath.Account, sitepath.MCP, memberScopes, s.Issuer)
	if s.AdminPrefix != "" {
		m.line("- **Operator clients** act for a site operator (a person with the role `owner`, `admin` or "+
			"`operator`) and use the admin API under `%s` with the operator scopes: every scope below except "+
			"`account:read` and `account:write`. Those two are reserved to member clients; an operator client that "+
			"requests them gets `invalid_scope`.", s.AdminPrefix)
	} else {
		m.line("- **Operator clients** act for a site operator (a person with the role `owner`, `admin` or " +
			"`operator`) with the operator scopes: every scope below except `account:read` and `account:write`, " +
			"which are reserved to member clients (an operator client that requests them gets `invalid_scope`). " +
			"This site has no admin API configured.")
	}
	m.blank()

	m.line("## 1. Discover")
	m.blank()
	m.code("sh",
		"curl "+u(sitepath.ProtectedResource),
		"curl "+u(sitepath.ASMetadata),
		"curl "+u(sitepath.OIDCConfig))
	m.line("The protected resource metadata names the resource (`%s`), its authorization server (`%s`) and the "+
		"scopes a member client requests (`%s`). The authorization server metadata lists every scope, "+
		"`code_challenge_methods_supported: [\"S256\"]`, `client_id_metadata_document_supported: true` and, only "+
		"while an ID token can be signed, `jwks_uri` and `id_token_signing_alg_values_supported`.",
		s.Issuer, s.Issuer, memberScopes)
	m.blank()
	m.line("A protected endpoint that receives an invalid token, or one lacking a required scope, answers with a " +
		"`WWW-Authenticate` header pointing at the protected resource metadata. Do not rely on provoking that " +
		"challenge: `/mcp` answers anonymous requests with 200, so sign in from the metadata up front.")
	m.blank()

	m.line("## 2. Get a client_id")
	m.blank()
	m.line("### Known vendor integrations")
	m.blank()
	m.line("Register with the integration's `client_name` and its redirect URIs; the response carries that " +
		"integration's `client_id`. The name matches without regard to case and to white space around it " +
		"(`\" claude \"` is `Claude`). The redirect URIs must be among the integration's own, otherwise the request " +
		"is refused with `invalid_redirect_uri`. An unrecognized `client_name` is refused with " +
		"`invalid_client_metadata`, and a fixed https callback of an unregistered integration with " +
		"`invalid_redirect_uri`.")
	m.blank()
	m.line("### Loopback apps (CLI tools, desktop apps, local agents)")
	m.blank()
	m.line("A client whose redirect URIs are all loopback addresses (`http://127.0.0.1:<port>/<path>`, " +
		"`http://[::1]:<port>/<path>` or `http://localhost:<port>/<path>`) is accepted. It is a client of the " +
		"operator audience, so only a person with an operator role can authorize it; the port may change between " +
		"runs (RFC 8252 §7.3). By default it is public (`token_endpoint_auth_method` `none`), and registering the " +
		"same request again returns the same client.")
	m.blank()
	m.code("sh",
		"curl -X POST "+u(sitepath.Register)+" \\",
		"  -H 'Content-Type: application/json' \\",
		`  -d '{"client_name": "my-cli", "application_type": "native",`,
		`       "redirect_uris": ["http://127.0.0.1:8765/callback"],`,
		`       "token_endpoint_auth_method": "none"}'`)
	m.line("The answer is 201 with the registered metadata and `client_id`.")
	m.blank()
	m.line("A loopback client may instead register with `\"token_endpoint_auth_method\": \"client_secret_post\"` " +
		"to get a secret of its own installation (RFC 8252 §8.5). The 201 answer then carries `client_secret` " +
		"(shown only in this answer; store it) and `client_secret_expires_at: 0` (it does not expire), and every " +
		"such registration creates a new client. From then on the token, revocation and introspection endpoints " +
		"require `client_id` and `client_secret` in the form body; without them the answer is 401 " +
		"`invalid_client`. `client_secret_basic` and other methods are refused with `invalid_client_metadata`.")
	m.blank()
	m.line("**Your users will see the consent page every time.** A loopback redirect URI does not prove which " +
		"program is asking: any program on the user's machine can listen on a port and send your `client_id`. So " +
		"this site never turns a remembered approval into a silent code for a loopback redirect URI (RFC 8252 " +
		"§8.6): each authorization shows the consent page, noting what the user approved before, and " +
		"`prompt=none` answers `consent_required` instead of a code. Keep the refresh token rather than " +
		"authorizing again.")
	m.blank()
	m.line("### Member applications")
	m.blank()
	m.line("A client that acts for a member is not created by registration. An operator creates it in the site's "+
		"admin area, **Developers → OAuth applications** (<%s>), chooses its scopes and passes the `client_id` "+
		"(and a secret for a confidential client) to the client's developer. Anyone with a role at the site, "+
		"students included, may then authorize it. That area appears once the operator enables the beta feature "+
		"**MCP connections**.", u(sitepath.AdminApplications))
	m.blank()
	if s.MCPConnections {
		m.line("MCP connections is currently **on** at this site: operators can create member applications.")
	} else {
		m.line("MCP connections is currently **off** at this site: no member applications can be created until an " +
			"operator enables it.")
	}
	m.blank()
	m.line("### Client ID Metadata Documents")
	m.blank()
	m.line("A client that is not a known integration may publish a metadata document over https and use its URL " +
		"as `client_id` (advertised by `client_id_metadata_document_supported`). The document's own `client_id` " +
		"must equal its URL, its `redirect_uris` must be under the document's host or be loopback addresses, and " +
		"the client is public (`none`). While unreviewed, such a client may request read and identity scopes " +
		"only (`openid`, `profile`, `email` and `*:read` scopes); an operator can mark it reviewed. A document on " +
		"a host this site does not permit is refused with `invalid_client_metadata`. A remembered approval " +
		"skips the consent page only for an https redirect URI on the document's host; with a loopback redirect " +
		"URI the user sees the page every time.")
	m.blank()

	m.line("## 3. Authorize (PKCE S256)")
	m.blank()
	m.line("Create a PKCE verifier and its S256 challenge:")
	m.blank()
	m.code("sh",
		"CODE_VERIFIER=$(openssl rand -base64 48 | tr '+/' '-_' | tr -d '=\\n')",
		"CODE_CHALLENGE=$(printf %s \"$CODE_VERIFIER\" | openssl dgst -sha256 -binary | openssl base64 -A | tr '+/' '-_' | tr -d '=')")
	q := url.Values{}
	q.Set("response_type", "code")
	q.Set("client_id", "CLIENT_ID")
	q.Set("redirect_uri", "http://127.0.0.1:8765/callback")
	q.Set("scope", memberScopes)
	q.Set("resource", s.Issuer)
	q.Set("code_challenge", "CODE_CHALLENGE")
	q.Set("code_challenge_method", "S256")
	q.Set("state", "STATE")
	q.Set("nonce", "NONCE")
	m.line("Send the user's browser to the authorization endpoint (a member client; `resource` is required for "+
		"member tokens and its value is `%s`):", s.Issuer)
	m.blank()
	m.code("", u(sitepath.Authorize)+"?"+q.Encode())
	m.line("| Parameter | Required | Notes |")
	m.line("|---|---|---|")
	m.line("| `response_type` | yes | `code` |")
	m.line("| `client_id` | yes | registered client id, or the URL of a Client ID Metadata Document |")
	m.line("| `redirect_uri` | yes | must be registered for the client |")
	m.line("| `scope` | yes | space-separated scopes |")
	m.line("| `resource` | for member tokens | `%s`; repeat it at the token endpoint |", s.Issuer)
	m.line("| `code_challenge` | yes | PKCE S256 challenge |")
	m.line("| `code_challenge_method` | yes | `S256` |")
	m.line("| `state` | recommended | opaque value |")
	m.line("| `nonce` | optional | echoed in the `id_token` |")
	m.line("| `prompt` | optional | `none`: never show a page, answer `login_required` or `consent_required` instead; `consent`: always show the consent page |")
	m.blank()
	m.line("A browser that is not signed in is sent to the site's login page first. The consent page follows, " +
		"unless the user approved these scopes before and the redirect URI proves the client: an https redirect " +
		"URI registered for a vendor integration or a member application, or one on a metadata document's own " +
		"host. A loopback redirect URI never does, so its users are asked every time.")
	m.blank()
	m.line("On approval the browser is "+
		"redirected to `redirect_uri` with `code`, `state` and `iss` (RFC 9207); check that `iss` is `%s`. A "+
		"refusal comes back the same way with `error` instead of `code`. An unknown client or an unregistered "+
		"redirect URI gets an error page, never a redirect.", s.Issuer)
	m.blank()

	m.line("## 4. Exchange the code")
	m.blank()
	m.code("sh",
		"curl -X POST "+u(sitepath.Token)+" \\",
		"  -d grant_type=authorization_code \\",
		"  -d code=AUTHORIZATION_CODE \\",
		"  --data-urlencode redirect_uri=http://127.0.0.1:8765/callback \\",
		"  -d client_id=CLIENT_ID \\",
		"  -d code_verifier=\"$CODE_VERIFIER\" \\",
		"  --data-urlencode resource="+shellQuote(s.Issuer))
	m.line("The body is `application/x-www-form-urlencoded`. Public clients authenticate with `none` (only " +
		"`client_id`); confidential clients add `client_secret` (`client_secret_post`). The answer is an RFC 6749 " +
		"token response:")
	m.blank()
	m.code("json",
		"{",
		`  "access_token": "ACCESS_TOKEN",`,
		`  "token_type": "Bearer",`,
		`  "expires_in": 3600,`,
		`  "scope": "`+memberScopes+`",`,
		`  "refresh_token": "REFRESH_TOKEN",`,
		`  "id_token": "ID_TOKEN"`,
		"}")
	m.line("`expires_in` is an example value; use the one you receive. An `id_token` is included only when `openid` " +
		"was requested and the discovery document lists `id_token_signing_alg_values_supported` and `jwks_uri` " +
		"(see ID tokens below).")
	m.blank()

	m.line("## 5. Call the Account API")
	m.blank()
	m.line("`POST %s` reads the signed-in member's data. The token must carry `account:read` and be bound to `%s`. "+
		"There is no anonymous mode.", sitepath.Account, s.Issuer)
	m.blank()
	m.code("sh",
		"curl -X POST "+u(sitepath.Account)+" \\",
		"  -H 'Authorization: Bearer ACCESS_TOKEN' \\",
		"  -H 'Content-Type: application/json' \\",
		`  -d '{"query": "`+exampleViewerQuery+`"}'`)
	m.line("`viewer` has `id`, `email` and `enrolledCourses(first: <int>)`, whose `nodes` have `slug`, `expireDate`, " +
		"`hasLifetimeAccess` and `lastWatchedLecture { lectureId positionSeconds }`. The member's orders and " +
		"event registrations are reachable through the same API.")
	m.blank()
	m.line("A request without a token, or with a token that is invalid, expired, revoked or issued for a different " +
		"origin, gets 401 `invalid_token`; a valid token without `account:read` gets 403 `insufficient_scope`. " +
		"Both carry `WWW-Authenticate` with `resource_metadata`.")
	m.blank()

	m.line("## 6. MCP at /mcp")
	m.blank()
	m.line("`%s` is an MCP server over Streamable HTTP (stateless; send JSON-RPC messages with POST).", u(sitepath.MCP))
	m.blank()
	m.line("- **Anonymous** (no `Authorization` header): public catalog tools only (`search_catalog`, " +
		"`get_course`, `list_events`, `list_membership_plans`).")
	m.line("- **Member** (the same member token as for the Account API): the public tools plus `my_enrollments` " +
		"and `account_query` (read-only GraphQL against the member's own Account API; mutations need " +
		"`account:write`).")
	m.line("- A token that is not valid here gets 401 `invalid_token` with the challenge; it is never served as " +
		"anonymous.")
	m.blank()

	if s.AdminPrefix != "" {
		m.line("## 7. Operator admin API")
		m.blank()
		m.line("Operator tokens reach the school's admin API under `%s`. By default the first path segment is the "+
			"area; `GET` needs `<area>:read`, `POST`, `PUT`, `PATCH` and `DELETE` need `<area>:write` (an area "+
			"written `membership-plans` is the same as `membership_plans`), and areas or methods without a scope "+
			"are refused. The operator may configure other requirements for particular paths. Request and "+
			"response bodies are the school's own.", u(s.AdminPrefix))
		m.blank()
		m.line("| Area | Read | Write |")
		m.line("|---|---|---|")
		for _, a := range adminAreas(s.Scopes) {
			r, w := "-", "-"
			if a.read {
				r = "`" + a.name + ":read`"
			}
			if a.write {
				w = "`" + a.name + ":write`"
			}
			m.line("| `%s/%s` | %s | %s |", s.AdminPrefix, a.name, r, w)
		}
		m.blank()
	}

	m.line("## Refresh")
	m.blank()
	m.code("sh",
		"curl -X POST "+u(sitepath.Token)+" \\",
		"  -d grant_type=refresh_token \\",
		"  -d refresh_token=REFRESH_TOKEN \\",
		"  -d client_id=CLIENT_ID")
	m.line("Refresh tokens rotate: every refresh returns a new refresh token and the old one stops working. " +
		"Presenting an already-rotated refresh token revokes the whole grant (a short grace window covers " +
		"concurrent refreshes). Refresh responses carry no `id_token`.")
	m.blank()

	m.line("## Revocation")
	m.blank()
	m.code("sh",
		"curl -X POST "+u(sitepath.Revoke)+" \\",
		"  -d token=REFRESH_TOKEN \\",
		"  -d client_id=CLIENT_ID")
	m.line("Form fields `token` (access or refresh token) and `client_id` (plus `client_secret` for confidential " +
		"clients). The answer is 200 whether or not the token was known; a revoked token fails on the next request.")
	m.blank()

	m.line("## Introspection")
	m.blank()
	m.code("sh",
		"curl -X POST "+u(sitepath.Introspect)+" \\",
		"  -d token=ACCESS_TOKEN \\",
		"  -d client_id=CLIENT_ID")
	m.line("RFC 7662. A client sees its own tokens only; anything else is `{\"active\": false}`. `aud` is the "+
		"origin the token is bound to (`%s` for a member token of this site), `audience_type` is `member` or "+
		"`operator`.", s.Issuer)
	m.blank()

	m.line("## UserInfo")
	m.blank()
	m.code("sh", "curl "+u(sitepath.UserInfo)+" -H 'Authorization: Bearer ACCESS_TOKEN'")
	m.line("Returns `sub`, `email` (with the `email` scope), `name`, `org_id` and `roles`. The token needs `openid`.")
	m.blank()

	m.line("## ID tokens")
	m.blank()
	m.line("When issued (code exchange only, `openid` requested, and the discovery document lists both " +
		"`id_token_signing_alg_values_supported` and `jwks_uri`), the ID token:")
	m.blank()
	m.line("- is signed with ES256; the signature validates against the key named by `kid` at `jwks_uri` (%s);",
		u(sitepath.JWKS))
	m.line("- has `iss` = `%s` and `aud` = your `client_id`;", s.Issuer)
	m.line("- expires 10 minutes after issue (`exp`); allow no more than your verifier's usual clock skew;")
	m.line("- echoes the `nonce` you sent;")
	m.line("- carries the claims `sub`, `email`, `name`, `org_id`, `roles`.")
	m.blank()
	m.line("The key set is published before a key signs, so `jwks_uri` alone does not promise an ID token. When " +
		"either discovery field is absent, or no `id_token` arrives, read the claims from UserInfo instead.")
	m.blank()

	m.line("## Errors")
	m.blank()
	m.line("OAuth endpoints answer with an RFC 6749 §5.2 JSON body: `{\"error\": \"...\", \"error_description\": \"...\"}`.")
	m.blank()
	m.line("| Code | When |")
	m.line("|---|---|")
	m.line("| `invalid_request` | malformed request |")
	m.line("| `invalid_grant` | invalid, expired or already used code or refresh token, or a wrong PKCE verifier |")
	m.line("| `invalid_client` | unknown client or wrong client authentication |")
	m.line("| `invalid_target` | `resource` missing for a member token, not `%s`, or repeated (RFC 8707) |", s.Issuer)
	m.line("| `invalid_scope` | scope not allowed for the client, e.g. `account:read` requested by an operator client |")
	m.line("| `invalid_client_metadata` | registration with an unrecognized `client_name`, or a metadata-document host the server does not permit |")
	m.line("| `invalid_redirect_uri` | registration with a non-loopback https redirect for an unregistered integration |")
	m.line("| `invalid_token` | protected resource, HTTP 401: missing, invalid or malformed token, or one issued for a different origin; with `WWW-Authenticate` |")
	m.line("| `insufficient_scope` | protected resource, HTTP 403: valid token lacking a required scope; with `WWW-Authenticate` |")
	m.blank()
	m.line("Challenges look like `WWW-Authenticate: Bearer error=\"invalid_token\", error_description=\"...\", "+
		"resource_metadata=\"%s\"` (with `scope=\"...\"` on `insufficient_scope`). A request without a token to "+
		"`/mcp` is served as anonymous; the same request to `%s` gets 401 `invalid_token`.",
		u(sitepath.ProtectedResource), sitepath.Account)
	m.blank()

	m.line("## Scopes")
	m.blank()
	m.line("| Scope | Grants | Clients |")
	m.line("|---|---|---|")
	desc := scopeDescriptions(s.Scopes)
	for _, sc := range dedupe(s.Scopes) {
		who := "operator"
		switch {
		case !isOperatorScope(sc):
			who = "member"
		case sc == "openid" || sc == "profile" || sc == "email":
			who = "member, operator"
		}
		m.line("| `%s` | %s | %s |", sc, escapeMarkdown(desc[sc]), who)
	}
	m.blank()
	return m.String()
}
