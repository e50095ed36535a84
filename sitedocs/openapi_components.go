package sitedocs

import (
	"strings"

	"github.com/schoolgate/schoolgate/policy"
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
		{"parameters", parameters(s)},
		{"requestBodies", obj{
			{"AdminBody", obj{{"required", false}, {"description", "The school's own request body"}, {"content", anything}}},
		}},
		{"headers", obj{
			{"WWWAuthenticate", header(challengeWords(s))},
			{"NoStore", header("`no-store`")},
			{"ETag", header("Strong entity tag of the body")},
			{"DocumentCache", header("`public, max-age=300`; `no-store` while the school could not read its catalog yet " +
				"(for this document also its admin API description), so that no cache keeps what lacks it")},
			{"RetryAfter", header("Seconds to wait before asking again")},
			{"DPoPNonce", header("The nonce to put in the next DPoP proof (RFC 9449 §8, §9)")},
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
				"`account:write`). Tokens are sent as `Authorization: Bearer <ACCESS_TOKEN>`." + dpopWords(s)},
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

// parameters are the shared parameters: the admin API's path, and the
// DPoP proof where the school takes DPoP.
func parameters(s Site) obj {
	out := obj{
		{"AdminPath", obj{{"name", "path"}, {"in", "path"}, {"required", true},
			{"description", "Path below the area, e.g. a resource id; its meaning is the school's own"},
			{"schema", str("")}}},
	}
	if s.DPoPOn() {
		desc := "DPoP proof (RFC 9449) for this request, signed with the key the token is bound to; " +
			"required with `Authorization: DPoP <ACCESS_TOKEN>` and at the token endpoint for a DPoP-bound token"
		out = out.with("DPoP", obj{{"name", "DPoP"}, {"in", "header"}, {"required", false},
			{"description", desc}, {"schema", str("")}})
	}
	return out
}

// dpopParams are the parameters an operation that takes a token (or
// issues one) adds for DPoP: the proof, where the school takes DPoP.
func dpopParams(s Site) []obj {
	if !s.DPoPOn() {
		return nil
	}
	return []obj{ref("parameters", "DPoP")}
}

// dpopWords say how the school takes DPoP, for the security scheme.
func dpopWords(s Site) string {
	switch {
	case !s.DPoPOn():
		return ""
	case s.DPoPRequired():
		return " This school issues DPoP-bound tokens only (RFC 9449): the token request carries a `DPoP` proof, " +
			"and every request sends the token as `Authorization: DPoP <ACCESS_TOKEN>` with a new proof in the `DPoP` header."
	}
	return " A token request with a `DPoP` proof (RFC 9449) gets a DPoP-bound token (`token_type` `DPoP`), sent as " +
		"`Authorization: DPoP <ACCESS_TOKEN>` with a new proof in the `DPoP` header of every request."
}

// challengeWords describe the WWW-Authenticate values of a refusal.
func challengeWords(s Site) string {
	bearer := "`Bearer error=\"...\", error_description=\"...\", resource_metadata=\"" +
		s.Issuer + sitepath.ProtectedResource + "\"`, plus `scope=\"...\"` on `insufficient_scope`"
	dpop := "`DPoP algs=\"" + strings.Join(policy.DPoPAlgs, " ") + "\", resource_metadata=\"...\"`"
	switch {
	case !s.DPoPOn():
		return "RFC 6750 Bearer challenge pointing at the protected-resource metadata: " + bearer
	case s.DPoPRequired():
		return "RFC 9449 DPoP challenge pointing at the protected-resource metadata: " + dpop +
			", with `error` (`invalid_token`, `invalid_dpop_proof`, `use_dpop_nonce`, `insufficient_scope`) and `error_description`"
	}
	return "Two challenges, each a header value: the RFC 6750 Bearer challenge pointing at the protected-resource metadata, " +
		bearer + ", then the RFC 9449 DPoP challenge, " + dpop + ". The error is in the challenge of the scheme the request used " +
		"(`invalid_dpop_proof` and `use_dpop_nonce` in the DPoP one)"
}
