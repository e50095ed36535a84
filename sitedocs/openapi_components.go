package sitedocs

import (
	"strings"

	"github.com/schoolgate/schoolgate/sitepath"
)

// openAPIComponents are what the operations refer to: the security
// schemes, schemas, shared responses, the admin API's parameter and body,
// and headers.
func openAPIComponents(s Site) obj {
	challenged := func(desc string) obj {
		return response(desc).
			with("headers", obj{{"WWW-Authenticate", ref("headers", "WWWAuthenticate")}}).
			with("content", jsonContent(schemaRef("OAuthError")))
	}
	anything := content("*/*", obj{})
	return obj{
		{"securitySchemes", securitySchemes(s)},
		{"schemas", openAPISchemas(s)},
		{"responses", obj{
			{"InvalidToken", challenged("`invalid_token`: no token where one is required, or an invalid, expired, " +
				"revoked or malformed token, or one issued for a different origin")},
			{"InsufficientScope", challenged("`insufficient_scope`: a valid token lacking a required scope (or of the wrong audience)")},
			{"AdminResult", response("The school's own response").with("content", anything)},
		}},
		{"parameters", obj{
			{"AdminPath", obj{{"name", "path"}, {"in", "path"}, {"required", true},
				{"description", "Path below the area, e.g. a resource id; its meaning is the school's own"},
				{"schema", str("")}}},
		}},
		{"requestBodies", obj{
			{"AdminBody", obj{{"required", false}, {"description", "The school's own request body"}, {"content", anything}}},
		}},
		{"headers", obj{
			{"WWWAuthenticate", header("RFC 6750 Bearer challenge pointing at the protected-resource metadata: " +
				"`Bearer error=\"...\", error_description=\"...\", resource_metadata=\"" +
				s.Issuer + sitepath.ProtectedResource + "\"`, plus `scope=\"...\"` on `insufficient_scope`")},
			{"NoStore", header("`no-store`")},
			{"ETag", header("Strong entity tag of the body")},
			{"DocumentCache", header("`public, max-age=300`; `no-store` while the school could not read its catalog yet " +
				"(for this document also its admin API description), so that no cache keeps what lacks it")},
			{"RetryAfter", header("Seconds to wait before asking again")},
		}},
	}
}

// securitySchemes are OAuth 2.0 with this site's endpoints and scopes, and
// its OpenID Connect discovery.
func securitySchemes(s Site) obj {
	scopes := obj{}
	for _, sc := range dedupe(s.Scopes) {
		scopes = scopes.with(sc, scopeDescription(sc))
	}
	return obj{
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
	}
}

func header(desc string) obj { return obj{{"description", desc}, {"schema", str("")}} }
