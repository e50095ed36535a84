package sitedocs

import (
	"context"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/schoolgate/schoolgate/sitepath"
)

// validateWithKin loads the document with kin-openapi, a strict
// validator, and fails on any error it reports.
func validateWithKin(t *testing.T, raw string) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData([]byte(raw))
	if err != nil {
		t.Fatalf("kin-openapi cannot load openapi.json: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("kin-openapi finds openapi.json invalid: %v", err)
	}
	return doc
}

func TestOpenAPIValidates(t *testing.T) {
	for name, s := range map[string]Site{
		"full":            testSite(),
		"no admin prefix": func() Site { s := testSite(); s.AdminPrefix = ""; return s }(),
		"switch off":      func() Site { s := testSite(); s.MCPConnections = false; return s }(),
	} {
		t.Run(name, func(t *testing.T) {
			validateWithKin(t, body(t, mustBuild(t, s, testFeed()), sitepath.OpenAPI))
			validateWithKin(t, body(t, mustBuild(t, s, nil), sitepath.OpenAPI))
		})
	}
}

const schoolAdminOpenAPI = `{
  "openapi": "3.0.3",
  "info": {"title": "School admin", "version": "7"},
  "servers": [{"url": "http://legacy.internal:9080"}],
  "paths": {
    "/admin/api/courses": {
      "get": {"operationId": "listCourses", "responses": {"200": {"description": "courses",
        "content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/Course"}}}}}}},
      "post": {"operationId": "createCourse", "requestBody": {"$ref": "#/components/requestBodies/CourseBody"},
        "responses": {"201": {"description": "created"}}}
    },
    "/admin/api/courses/{id}": {
      "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
      "get": {"operationId": "getCourse", "responses": {"200": {"description": "one",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Course"}}}}}},
      "delete": {"responses": {"204": {"description": "gone"}, "401": {"description": "the school's own 401"}}}
    },
    "/admin/api/orders/{id}": {
      "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
      "get": {"responses": {"200": {"description": "order"}}},
      "put": {"responses": {"200": {"description": "no orders:write scope exists"}}}
    },
    "/admin/api/secrets": {"get": {"responses": {"200": {"description": "no such area"}}}},
    "/public/hello": {"get": {"responses": {"200": {"description": "not behind the gateway"}}}}
  },
  "components": {
    "schemas": {
      "Course": {"type": "object", "properties": {"slug": {"type": "string"}, "price": {"$ref": "#/components/schemas/Price"}}},
      "Price": {"type": "number"},
      "OAuthError": {"type": "string", "description": "collides with ours by name"}
    },
    "requestBodies": {"CourseBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Course"}}}}},
    "securitySchemes": {"cookie": {"type": "apiKey", "in": "cookie", "name": "sid"}}
  }
}`

func TestAdminOpenAPIMerge(t *testing.T) {
	s := testSite()
	s.AdminOpenAPI = []byte(schoolAdminOpenAPI)
	raw := body(t, mustBuild(t, s, testFeed()), sitepath.OpenAPI)
	kin := validateWithKin(t, raw)
	doc := decodeOpenAPI(t, mustBuild(t, s, testFeed()))
	paths := doc["paths"].(map[string]any)

	for _, want := range []string{"/admin/api/courses", "/admin/api/courses/{id}", "/admin/api/orders/{id}",
		"/admin/api/students", "/admin/api/students/{path}", "/api/oauth/token"} {
		if paths[want] == nil {
			t.Errorf("missing path %s", want)
		}
	}
	for _, gone := range []string{"/admin/api/courses/{path}", "/admin/api/orders/{path}", "/admin/api/secrets", "/public/hello"} {
		if paths[gone] != nil {
			t.Errorf("path %s must not be there", gone)
		}
	}
	sec := func(path, method string) string {
		op := kin.Paths.Value(path).GetOperation(strings.ToUpper(method))
		if op == nil || op.Security == nil || len(*op.Security) != 1 {
			t.Fatalf("%s %s: no single security requirement", method, path)
		}
		return strings.Join((*op.Security)[0]["oauth2"], " ")
	}
	for _, tc := range []struct{ path, method, scope string }{
		{"/admin/api/courses", "get", "courses:read"},
		{"/admin/api/courses", "post", "courses:write"},
		{"/admin/api/courses/{id}", "delete", "courses:write"},
		{"/admin/api/orders/{id}", "get", "orders:read"},
	} {
		if got := sec(tc.path, tc.method); got != tc.scope {
			t.Errorf("%s %s needs %q, want %q", tc.method, tc.path, got, tc.scope)
		}
	}
	if kin.Paths.Value("/admin/api/orders/{id}").Put != nil {
		t.Error("PUT on orders needs orders:write, which no token can hold: it must be left out")
	}
	del := kin.Paths.Value("/admin/api/courses/{id}").Delete
	if del.Responses.Value("401").Value.Description == nil || *del.Responses.Value("401").Value.Description != "the school's own 401" ||
		del.Responses.Value("403") == nil {
		t.Error("the school's responses are kept and the gateway's 403 added")
	}
	if op := kin.Paths.Value("/admin/api/courses").Get; op.OperationID != "school_listCourses" {
		t.Errorf("operationId %q", op.OperationID)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	if schemas["Admin_Course"] == nil || schemas["Admin_Price"] == nil || schemas["Admin_OAuthError"] == nil {
		t.Error("upstream schemas are not merged under the Admin_ prefix")
	}
	if dig(schemas, "OAuthError", "type") != "object" {
		t.Error("the school's component replaced ours")
	}
	if dig(doc, "components", "securitySchemes", "cookie") != nil || strings.Contains(raw, "legacy.internal") {
		t.Error("the school's security schemes and servers must not leak into the document")
	}
}

func TestAdminOpenAPIWithTheGatewayPolicy(t *testing.T) {
	s := testSite()
	s.AdminOpenAPI = []byte(schoolAdminOpenAPI)
	s.AdminScopes = func(method, path string) ([]string, bool) {
		if strings.HasPrefix(path, "/admin/api/courses") && method == "DELETE" {
			return nil, false // a deny rule
		}
		return []string{"analytics:read"}, true
	}
	kin := validateWithKin(t, body(t, mustBuild(t, s, nil), sitepath.OpenAPI))
	if kin.Paths.Value("/admin/api/courses/{id}").Delete != nil {
		t.Error("an operation the policy denies is advertised")
	}
	op := kin.Paths.Value("/admin/api/courses").Get
	if got := (*op.Security)[0]["oauth2"]; len(got) != 1 || got[0] != "analytics:read" {
		t.Errorf("security %v, want the policy's analytics:read", got)
	}
}

func TestAdminOpenAPIRefused(t *testing.T) {
	for name, doc := range map[string]string{
		"not JSON":                 `openapi: 3.0.3`,
		"OpenAPI 3.1":              `{"openapi":"3.1.0","paths":{}}`,
		"Swagger 2":                `{"swagger":"2.0","paths":{}}`,
		"external ref":             `{"openapi":"3.0.3","paths":{"/admin/api/courses":{"get":{"responses":{"200":{"$ref":"other.json#/x"}}}}}}`,
		"deep ref":                 `{"openapi":"3.0.3","paths":{},"components":{"schemas":{"A":{"$ref":"#/components/schemas/B/properties/c"}}}}`,
		"null path item":           `{"openapi":"3.0.3","paths":{"/admin/api/courses":null}}`,
		"oversize":                 `{"openapi":"3.0.3","x":"` + strings.Repeat("a", MaxAdminOpenAPIBytes) + `"}`,
		"paths not a map":          `{"openapi":"3.0.3","paths":[]}`,
		"nothing under the prefix": `{"openapi":"3.0.3","paths":{"/api/v2/courses":{"get":{"responses":{"200":{"description":"x"}}}}}}`,
		"nothing allowed":          `{"openapi":"3.0.3","paths":{"/admin/api/secrets":{"get":{"responses":{"200":{"description":"x"}}}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := testSite()
			s.AdminOpenAPI = []byte(doc)
			if _, err := Build(s, nil, testNow); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func FuzzAdminOpenAPI(f *testing.F) {
	f.Add([]byte(schoolAdminOpenAPI))
	f.Add([]byte(`{"openapi":"3.0.0","paths":{"/admin/api/x":{"get":{"$ref":"#/components/a/b"}}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s := testSite()
		s.AdminOpenAPI = raw
		_, _ = Build(s, nil, testNow) // must not panic
	})
}
