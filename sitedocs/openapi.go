package sitedocs

import (
	"bytes"
	"encoding/json"

	"github.com/schoolgate/schoolgate/sitepath"
)

// /openapi.json describes the whole origin in one OpenAPI 3.0 document:
// the authorization server (openapi_oauth.go), the Account API, /mcp and
// the documents (openapi_resources.go), the operator admin API
// (openapi_admin.go, or the school's own description, adminopenapi.go),
// and the components they share (openapi_components.go).

// openAPIVersion is the OpenAPI release the document follows: clients are
// promised an OpenAPI 3.0 document.
const openAPIVersion = "3.0.3"

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
			tag("Discovery", "Metadata documents (no authentication)"),
			tag("OAuth", "Authorization server endpoints"),
			tag("Account", "Member Account API (member tokens only; no anonymous mode)"),
			tag("MCP", "MCP server over Streamable HTTP (anonymous or member)"),
			tag("Documents", "Machine-readable documents of this site"),
			tag("Admin", "Operator admin API, proxied to the school with the caller's identity. "+
				"Operator tokens only; GET needs `<area>:read`, POST, PUT, PATCH and DELETE need `<area>:write`. "+
				"Request and response bodies are the school's own."),
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

// openAPIPaths lists every operation, in the order the site is read:
// discovery, the authorization server, the resources, the documents, the
// admin API.
func openAPIPaths(s Site, admin *adminDoc) obj {
	var paths obj
	for _, section := range []func(Site) obj{authServerPaths, resourcePaths, documentPaths} {
		for _, m := range section(s) {
			paths.add(m.k, m.v)
		}
	}
	for _, m := range adminAPIPaths(s, admin) {
		paths.add(m.k, m.v)
	}
	return paths
}

// operation is one OpenAPI operation. Its members are written in one
// fixed order; empty ones are left out.
type operation struct {
	tag, summary, description, id string
	security                      []obj
	parameters                    []obj
	requestBody                   obj
	responses                     obj
}

func (o operation) obj() obj {
	out := obj{{"tags", []string{o.tag}}, {"summary", o.summary}}
	if o.description != "" {
		out = out.with("description", o.description)
	}
	out = out.with("operationId", o.id)
	if o.security != nil {
		out = out.with("security", o.security)
	}
	if o.parameters != nil {
		out = out.with("parameters", o.parameters)
	}
	if o.requestBody != nil {
		out = out.with("requestBody", o.requestBody)
	}
	return out.with("responses", o.responses)
}

// onGet and onPost are path items of one operation.
func onGet(o operation) obj  { return obj{{"get", o.obj()}} }
func onPost(o operation) obj { return obj{{"post", o.obj()}} }

func tag(name, description string) obj { return obj{{"name", name}, {"description", description}} }

func ref(kind, name string) obj { return obj{{"$ref", "#/components/" + kind + "/" + name}} }

func schemaRef(name string) obj { return ref("schemas", name) }

func str(desc string) obj {
	if desc == "" {
		return obj{{"type", "string"}}
	}
	return obj{{"type", "string"}, {"description", desc}}
}

func strEnum(desc string, values ...string) obj {
	o := obj{{"type", "string"}, {"enum", values}}
	if desc != "" {
		o = o.with("description", desc)
	}
	return o
}

func anyObject() obj { return obj{{"type", "object"}} }

func object(required []string, props obj) obj {
	o := anyObject()
	if len(required) > 0 {
		o = o.with("required", required)
	}
	return o.with("properties", props)
}

// content is a media type map with one entry.
func content(mediaType string, schema any) obj {
	return obj{{mediaType, obj{{"schema", schema}}}}
}

func jsonContent(schema any) obj { return content("application/json", schema) }

// response is a response object; with adds its headers and content.
func response(desc string) obj { return obj{{"description", desc}} }

func jsonResponse(desc, schema string) obj {
	return response(desc).with("content", jsonContent(schemaRef(schema)))
}

func oauthErrorResponse(desc string) obj { return jsonResponse(desc, "OAuthError") }

// htmlPage is a response whose body is a page for the person.
func htmlPage(desc string) obj { return response(desc).with("content", obj{{"text/html", obj{}}}) }

func requiredBody(content obj) obj { return obj{{"required", true}, {"content", content}} }

func formBody(schema string) obj {
	return requiredBody(content("application/x-www-form-urlencoded", schemaRef(schema)))
}

func jsonBody(schema string) obj { return requiredBody(jsonContent(schemaRef(schema))) }

func oauthScopes(scopes ...string) []obj { return []obj{{{"oauth2", scopes}}} }

func queryParam(name string, required bool, schema obj) obj {
	o := obj{{"name", name}, {"in", "query"}, {"required", required}}
	if desc, ok := schema.get("description"); ok {
		o = o.with("description", desc)
	}
	return o.with("schema", schema)
}
