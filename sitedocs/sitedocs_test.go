package sitedocs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/mcpserver"
	"github.com/schoolgate/schoolgate/sitepath"
)

func decodeOpenAPI(t *testing.T, set *Set) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(body(t, set, sitepath.OpenAPI)), &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	return doc
}

func TestOpenAPIDocument(t *testing.T) {
	doc := decodeOpenAPI(t, mustBuild(t, testSite(), testFeed()))

	checks := []struct {
		name string
		got  any
		want any
	}{
		{"version", dig(doc, "openapi"), "3.0.3"},
		{"title", dig(doc, "info", "title"), "Demo School of Photography"},
		{"authorizationUrl", dig(doc, "components", "securitySchemes", "oauth2", "flows", "authorizationCode", "authorizationUrl"),
			testIssuer + sitepath.Authorize},
		{"tokenUrl", dig(doc, "components", "securitySchemes", "oauth2", "flows", "authorizationCode", "tokenUrl"),
			testIssuer + sitepath.Token},
		{"refreshUrl", dig(doc, "components", "securitySchemes", "oauth2", "flows", "authorizationCode", "refreshUrl"),
			testIssuer + sitepath.Token},
		{"oauth2 type", dig(doc, "components", "securitySchemes", "oauth2", "type"), "oauth2"},
		{"oidc type", dig(doc, "components", "securitySchemes", "openIdConnect", "type"), "openIdConnect"},
		{"oidc url", dig(doc, "components", "securitySchemes", "openIdConnect", "openIdConnectUrl"),
			testIssuer + sitepath.OIDCConfig},
		{"token body", dig(doc, "paths", sitepath.Token, "post", "requestBody", "content",
			"application/x-www-form-urlencoded", "schema", "$ref"), "#/components/schemas/TokenRequest"},
		{"graphql 401 header", dig(doc, "components", "responses", "InvalidToken", "headers", "WWW-Authenticate", "$ref"),
			"#/components/headers/WWWAuthenticate"},
		{"graphql 401", dig(doc, "paths", sitepath.AccountAPI, "post", "responses", "401", "$ref"),
			"#/components/responses/InvalidToken"},
		{"graphql 403", dig(doc, "paths", sitepath.AccountAPI, "post", "responses", "403", "$ref"),
			"#/components/responses/InsufficientScope"},
		{"register 201", dig(doc, "paths", sitepath.Register, "post", "responses", "201", "content",
			"application/json", "schema", "$ref"), "#/components/schemas/RegistrationResponse"},
		{"register error example", dig(doc, "paths", sitepath.Register, "post", "responses", "400", "content",
			"application/json", "examples", "invalid_redirect_uri", "value", "error"), "invalid_redirect_uri"},
		{"userinfo scope", fmt.Sprint(dig(doc, "paths", sitepath.UserInfo, "get", "security")), "[map[oauth2:[openid]]]"},
		{"account security", fmt.Sprint(dig(doc, "paths", sitepath.AccountAPI, "post", "security")), "[map[oauth2:[account:read]]]"},
		{"mcp security optional", fmt.Sprint(dig(doc, "paths", sitepath.MCP, "post", "security")), "[map[] map[oauth2:[account:read]]]"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	servers, _ := doc["servers"].([]any)
	if len(servers) != 1 || dig(servers[0], "url") != testIssuer {
		t.Errorf("servers = %v, want one with url %s", servers, testIssuer)
	}

	flowScopes, _ := dig(doc, "components", "securitySchemes", "oauth2", "flows", "authorizationCode", "scopes").(map[string]any)
	for _, sc := range testScopes {
		d, _ := flowScopes[sc].(string)
		if d == "" {
			t.Errorf("scope %s missing from the oauth2 flow", sc)
		}
	}
	if len(flowScopes) != len(testScopes) {
		t.Errorf("flow has %d scopes, want %d", len(flowScopes), len(testScopes))
	}

	for _, name := range []string{"OAuthError", "TokenResponse", "UserInfo"} {
		if dig(doc, "components", "schemas", name) == nil {
			t.Errorf("schema %s missing", name)
		}
	}
	userinfo := dig(doc, "components", "schemas", "UserInfo", "properties").(map[string]any)
	for _, claim := range []string{"sub", "email", "name", "org_id", "roles"} {
		if userinfo[claim] == nil {
			t.Errorf("UserInfo lacks %s", claim)
		}
	}

	for _, p := range []string{sitepath.Token, sitepath.Revoke, sitepath.UserInfo, sitepath.Register,
		sitepath.Introspect, sitepath.Authorize, sitepath.AccountAPI, sitepath.MCP,
		sitepath.OpenAPI, sitepath.AuthGuide, sitepath.LLMs, sitepath.Pricing} {
		if dig(doc, "paths", p) == nil {
			t.Errorf("path %s missing", p)
		}
	}
}

func TestOpenAPIAdminPaths(t *testing.T) {
	doc := decodeOpenAPI(t, mustBuild(t, testSite(), nil))
	paths := doc["paths"].(map[string]any)
	tests := []struct {
		path, method string
		scope        string // "" = no such operation
	}{
		{"/admin/api/courses", "get", "courses:read"},
		{"/admin/api/courses", "post", "courses:write"},
		{"/admin/api/courses/{path}", "put", "courses:write"},
		{"/admin/api/courses/{path}", "patch", "courses:write"},
		{"/admin/api/courses/{path}", "delete", "courses:write"},
		{"/admin/api/membership_plans/{path}", "get", "membership_plans:read"},
		{"/admin/api/analytics", "get", "analytics:read"},
		{"/admin/api/analytics", "post", ""},
		{"/admin/api/storage", "get", ""},
		{"/admin/api/storage", "post", "storage:write"},
		{"/admin/api/account", "get", ""},
		{"/admin/api/openid", "get", ""},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			sec := dig(paths, tc.path, tc.method, "security")
			if tc.scope == "" {
				if sec != nil {
					t.Fatalf("unexpected operation with security %v", sec)
				}
				return
			}
			if got := fmt.Sprint(sec); got != "[map[oauth2:["+tc.scope+"]]]" {
				t.Fatalf("security = %s, want %s", got, tc.scope)
			}
		})
	}

	// Without an admin prefix there is no admin API to describe.
	s := testSite()
	s.AdminPrefix = ""
	doc = decodeOpenAPI(t, mustBuild(t, s, nil))
	for p := range doc["paths"].(map[string]any) {
		if strings.Contains(p, "courses") {
			t.Errorf("admin path %s without an admin prefix", p)
		}
	}
}

// TestOpenAPIWellFormed checks what a strict tool would: every $ref
// resolves, operation ids are unique, and the output is deterministic.
func TestOpenAPIWellFormed(t *testing.T) {
	set := mustBuild(t, testSite(), testFeed())
	doc := decodeOpenAPI(t, set)
	ids := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := x["$ref"].(string); ok {
				keys := strings.Split(strings.TrimPrefix(r, "#/"), "/")
				if dig(doc, keys...) == nil {
					t.Errorf("unresolved $ref %s", r)
				}
			}
			if id, ok := x["operationId"].(string); ok {
				if ids[id] {
					t.Errorf("duplicate operationId %s", id)
				}
				ids[id] = true
			}
			for _, v := range x {
				walk(v)
			}
		case []any:
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(doc)
	if len(ids) < 20 {
		t.Errorf("only %d operations", len(ids))
	}
	again := mustBuild(t, testSite(), testFeed())
	for p := range set.docs {
		if !bytes.Equal(mustDoc(t, set, p).body, mustDoc(t, again, p).body) {
			t.Errorf("%s differs between two builds", p)
		}
	}
	raw := body(t, set, sitepath.OpenAPI)
	if !strings.HasPrefix(raw, "{\n  \"openapi\": \"3.0.3\",") {
		t.Errorf("openapi.json does not start with the version: %.40q", raw)
	}
}

func TestAuthMarkdown(t *testing.T) {
	on := testSite()
	off := testSite()
	off.MCPConnections = false
	tests := []struct {
		name     string
		site     Site
		want     []string
		wantNone []string
	}{
		{"urls and rules", on, []string{
			"# Authentication at Demo School of Photography\n",
			"curl -X POST " + testIssuer + sitepath.Token,
			testIssuer + sitepath.Authorize + "?",
			"code_challenge_method=S256",
			"resource=https%3A%2F%2Fschool.example",
			"--data-urlencode resource='" + testIssuer + "'",
			testIssuer + sitepath.ProtectedResource,
			testIssuer + sitepath.ASMetadata,
			testIssuer + sitepath.OIDCConfig,
			testIssuer + sitepath.Register,
			testIssuer + sitepath.Revoke,
			testIssuer + sitepath.Introspect,
			testIssuer + sitepath.UserInfo,
			testIssuer + sitepath.AccountAPI,
			testIssuer + sitepath.MCP,
			"http://127.0.0.1:8765/callback",
			"Developers → OAuth applications",
			"currently **on**",
			"enrolledCourses(first: 10) { nodes { slug expireDate hasLifetimeAccess lastWatchedLecture { lectureId positionSeconds }",
			"ES256", "10 minutes", "UserInfo instead",
			"revokes the whole grant",
			"**Your users will see the consent page every time.**",
			"`prompt=none` answers `consent_required`",
			"`\"token_endpoint_auth_method\": \"client_secret_post\"`",
			"`client_secret_expires_at: 0`",
			"| `prompt` | optional |",
			"`client_id` must equal its URL",
			"read and identity scopes only",
			"`invalid_scope`", "`invalid_client_metadata`", "`invalid_redirect_uri`", "`invalid_token`",
			"`insufficient_scope`", "`invalid_grant`", "`invalid_client`", "`invalid_request`",
			"| `/admin/api/courses` | `courses:read` | `courses:write` |",
			"| `/admin/api/storage` | - | `storage:write` |",
			"| `storage:write` | Write access to storage | operator |",
			"| `account:read` |",
		}, []string{"currently **off**"}},
		{"mcp connections off", off, []string{"currently **off**"}, []string{"currently **on**"}},
		{"no admin api", func() Site { s := testSite(); s.AdminPrefix = ""; return s }(),
			[]string{"no admin API configured"}, []string{"## 7. Operator admin API"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			md := body(t, mustBuild(t, tc.site, testFeed()), sitepath.AuthGuide)
			for _, w := range tc.want {
				if !strings.Contains(md, w) {
					t.Errorf("auth.md lacks %q", w)
				}
			}
			for _, w := range tc.wantNone {
				if strings.Contains(md, w) {
					t.Errorf("auth.md has %q", w)
				}
			}
			for _, sc := range testScopes {
				if !strings.Contains(md, "| `"+sc+"` |") {
					t.Errorf("auth.md scope table lacks %s", sc)
				}
			}
		})
	}
}

func TestLLMsTxt(t *testing.T) {
	txt := body(t, mustBuild(t, testSite(), testFeed()), sitepath.LLMs)
	if !strings.HasPrefix(txt, "# Demo School of Photography\n\n> Online photography courses, workshops and photo walks.\n") {
		t.Fatalf("llms.txt header:\n%s", txt[:min(len(txt), 200)])
	}
	want := []string{
		"\n## Docs\n",
		"\n## Courses\n",
		"\n## Optional\n",
		"- [OpenAPI](" + testIssuer + "/openapi.json): ",
		"- [Authentication guide](" + testIssuer + "/auth.md): ",
		"- [Pricing](" + testIssuer + "/pricing.md): ",
		"- [MCP server](" + testIssuer + "/mcp): ",
		"(" + testIssuer + sitepath.ProtectedResource + ")",
		"- [Photography Fundamentals](" + testIssuer + "/courses/photography-fundamentals): Exposure, focus and composition. (49.00 EUR)",
		"- [Smartphone Photography](" + testIssuer + "/courses/smartphone-photography): free",
		"- [Hosted Elsewhere](https://courses.example.org/hosted): 1200 JPY",
		"- [Bad URL](" + testIssuer + "/courses/bad-url)",
		"- [Portrait Lighting Workshop](" + testIssuer + "/events/workshop): event, 2027-03-13 10:00 to 2027-03-14 16:00 (UTC+01:00), 290.00 EUR",
		"- [All Courses, Monthly](" + testIssuer + "/memberships/monthly): membership plan, 19.00 EUR per month",
		"- [Lightroom Preset Pack](" + testIssuer + "/products/presets): digital product, 12.50 EUR",
	}
	for _, w := range want {
		if !strings.Contains(txt, w) {
			t.Errorf("llms.txt lacks %q", w)
		}
	}
	for _, bad := range []string{"javascript:", "Spring Walk 2026"} {
		if strings.Contains(txt, bad) {
			t.Errorf("llms.txt has %q", bad)
		}
	}
	// The sections come in the llmstxt.org order.
	if d, c, o := strings.Index(txt, "## Docs"), strings.Index(txt, "## Courses"), strings.Index(txt, "## Optional"); !(d < c && c < o) {
		t.Errorf("section order: Docs %d, Courses %d, Optional %d", d, c, o)
	}
}

func TestLLMsTxtCapsHugeCatalogs(t *testing.T) {
	feed := &catalog.Feed{School: catalog.School{Name: "Big"}}
	for i := range 250 {
		feed.Courses = append(feed.Courses, catalog.Course{Slug: fmt.Sprintf("c%d", i), Title: fmt.Sprintf("Course %d", i)})
	}
	txt := body(t, mustBuild(t, testSite(), feed), sitepath.LLMs)
	if n := strings.Count(txt, "/courses/c"); n != llmsMaxCourses {
		t.Errorf("%d course links, want %d", n, llmsMaxCourses)
	}
	if !strings.Contains(txt, "- 50 more courses are not listed here: search them with the search_catalog tool") {
		t.Errorf("no pointer to search_catalog for the rest")
	}
	if strings.Contains(txt, "## Optional") {
		t.Errorf("empty Optional section")
	}
}

func TestPricingMarkdown(t *testing.T) {
	md := body(t, mustBuild(t, testSite(), testFeed()), sitepath.Pricing)
	want := []string{
		"# Pricing at Demo School of Photography\n",
		"## Courses\n\n- [Photography Fundamentals](" + testIssuer + "/courses/photography-fundamentals): 49.00 EUR\n",
		"- [Smartphone Photography](" + testIssuer + "/courses/smartphone-photography): free\n",
		"- [Hosted Elsewhere](https://courses.example.org/hosted): 1200 JPY\n",
		"- [No Price](" + testIssuer + "/courses/no-price): price not listed\n",
		"## Membership plans\n",
		": 19.00 EUR per month\n",
		": 190.00 EUR per year\n",
		"## Events\n\n- [Winter Light Photo Walk, Berlin](" + testIssuer + "/events/winter-walk): 2026-12-12 14:00–17:00 (UTC+01:00): 25.00 EUR\n",
		"- [Portfolio Review](" + testIssuer + "/events/webinar): 2027-01-20 18:00 (UTC): free\n",
		"1 past event is not listed.",
		"## Digital products\n\n- [Lightroom Preset Pack](" + testIssuer + "/products/presets): 12.50 EUR\n",
	}
	for _, w := range want {
		if !strings.Contains(md, w) {
			t.Errorf("pricing.md lacks %q", w)
		}
	}
	if strings.Contains(md, "Spring Walk") {
		t.Errorf("pricing.md lists a past event")
	}
	// Events are in date order: December before January before March.
	if a, b, c := strings.Index(md, "Winter Light"), strings.Index(md, "Portfolio Review"), strings.Index(md, "Portrait Lighting"); !(a < b && b < c) {
		t.Errorf("events out of order: %d %d %d", a, b, c)
	}
}

func TestNilAndEmptyFeed(t *testing.T) {
	tests := []struct {
		name    string
		feed    *catalog.Feed
		pricing string
		llms    string
	}{
		{"nil", nil, "No catalog has been imported yet", "## Courses\n\nNo catalog has been imported yet."},
		{"empty", &catalog.Feed{}, "The catalog lists nothing for sale.", "## Courses\n\nThe catalog lists no courses."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := mustBuild(t, testSite(), tc.feed)
			if p := body(t, set, sitepath.Pricing); !strings.Contains(p, tc.pricing) {
				t.Errorf("pricing.md:\n%s", p)
			}
			l := body(t, set, sitepath.LLMs)
			if !strings.Contains(l, tc.llms) || !strings.Contains(l, "## Docs") || strings.Contains(l, "## Optional") {
				t.Errorf("llms.txt:\n%s", l)
			}
			if !strings.Contains(l, "\n> Course school at "+testIssuer) {
				t.Errorf("llms.txt summary without a feed description:\n%s", l)
			}
			decodeOpenAPI(t, set)
			if a := body(t, set, sitepath.AuthGuide); !strings.Contains(a, testIssuer+sitepath.Token) {
				t.Errorf("auth.md without a feed lacks the token URL")
			}
		})
	}
}

func TestMarkdownInjectionFromFeed(t *testing.T) {
	evil := "[click](https://evil.example)<img src=x onerror=alert(1)>\n# Owned\u202e `code` *bold* https://evil.example"
	feed := &catalog.Feed{
		School: catalog.School{Name: evil, Description: evil},
		Courses: []catalog.Course{{Slug: "x) [y](https://evil.example", Title: evil, Summary: evil,
			Price: &catalog.Price{Amount: 5, Currency: "EUR](https://evil.example)"},
			Extra: map[string]json.RawMessage{"url": rawJSON("https://ok.example/a)[b](https://evil.example")}}},
		Events: []catalog.Event{{Slug: "e", Title: evil, StartsAt: "<b>soon</b>", Price: eur(1)}},
		MembershipPlans: []catalog.MembershipPlan{{Slug: "p", Name: evil, Price: eur(1),
			Interval: "[month](https://evil.example)"}},
		DigitalProducts: []catalog.DigitalProduct{{Slug: "d", Title: evil, Price: eur(1)}},
	}
	s := testSite()
	s.SchoolName = evil
	set := mustBuild(t, s, feed)
	for _, p := range []string{sitepath.LLMs, sitepath.Pricing, sitepath.AuthGuide} {
		t.Run(p, func(t *testing.T) {
			md := body(t, set, p)
			for _, bad := range []string{"[click]", "<img", "\n# Owned", "\u202e", "`code` *bold*", "](https://evil.example",
				"<b>"} {
				if containsUnescaped(md, bad) {
					t.Errorf("%s contains %q:\n%s", p, bad, md)
				}
			}
			// The feed's newline became a space: "Owned" never starts a line.
			for i, line := range strings.Split(md, "\n") {
				if i > 0 && strings.HasPrefix(strings.TrimLeft(line, "-> "), "#") && strings.Contains(line, "Owned") {
					t.Errorf("injected heading: %q", line)
				}
			}
		})
	}
	if !strings.Contains(body(t, set, sitepath.LLMs), `\[click\]\(https\://evil.example)\<img`) {
		t.Errorf("title not escaped as expected:\n%s", body(t, set, sitepath.LLMs))
	}
}

func TestBuildRejectsBadConfiguration(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Site)
	}{
		{"empty issuer", func(s *Site) { s.Issuer = "" }},
		{"relative issuer", func(s *Site) { s.Issuer = "school.example" }},
		{"issuer with path", func(s *Site) { s.Issuer = "https://school.example/a" }},
		{"issuer with query", func(s *Site) { s.Issuer = "https://school.example?x=1" }},
		{"ftp issuer", func(s *Site) { s.Issuer = "ftp://school.example" }},
		{"no scopes", func(s *Site) { s.Scopes = nil }},
		{"no member scopes", func(s *Site) { s.ProtectedResourceScopes = nil }},
		{"admin prefix with braces", func(s *Site) { s.AdminPrefix = "/admin/{x}" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testSite()
			tc.edit(&s)
			if _, err := Build(s, nil, testNow); err == nil {
				t.Fatal("Build accepted it")
			}
		})
	}
}

func TestBuildNormalizesSite(t *testing.T) {
	s := testSite()
	s.Issuer = "https://school.example/"
	s.SchoolName = "  "
	s.AdminPrefix = "admin/api"
	set := mustBuild(t, s, nil)
	doc := decodeOpenAPI(t, set)
	if got := dig(doc, "info", "title"); got != testIssuer {
		t.Errorf("title = %v, want the issuer", got)
	}
	if dig(doc, "paths", "/admin/api/courses") == nil {
		t.Errorf("admin prefix not normalized")
	}
	if strings.Contains(body(t, set, sitepath.AuthGuide), testIssuer+"//") {
		t.Errorf("double slash after the issuer")
	}
}

// containsUnescaped reports an occurrence of sub whose first byte is not
// backslash-escaped.
func containsUnescaped(s, sub string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return false
		}
		at := i + j
		n := 0
		for k := at - 1; k >= 0 && s[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return true
		}
		i = at + 1
	}
}

// TestEveryEndpointDocumented holds the documents to authserver's
// endpoint table: each endpoint it gives a title has an operation in
// openapi.json and a row in auth.md's table, and openapi.json describes
// no operation of the authorization server that the table lacks.
func TestEveryEndpointDocumented(t *testing.T) {
	set := mustBuild(t, testSite(), testFeed())
	md := body(t, set, sitepath.AuthGuide)
	listed := map[string]bool{}
	for _, e := range listedEndpoints(testSite().Endpoints) {
		listed[e.Path] = true
		if ops, _ := dig(decodeOpenAPI(t, set), "paths", e.Path).(map[string]any); len(ops) == 0 {
			t.Errorf("openapi.json does not describe %s (%s)", e.Path, e.Title)
		}
		if row := "| " + e.Title + " | `" + testIssuer + e.Path + "` |\n"; !strings.Contains(md, row) {
			t.Errorf("auth.md lacks the row %q", row)
		}
	}
	if len(listed) < 10 {
		t.Fatalf("only %d endpoints listed", len(listed))
	}
	s, _ := normalizeSite(testSite())
	for _, m := range append(discoveryOperations(s), oauthOperations(s)...) {
		if !listed[m.k] {
			t.Errorf("openapi.json describes %s, which authserver does not list", m.k)
		}
	}
}

// TestToolsListed holds the documents' tool lists to mcpserver's table:
// auth.md names every tool and llms.txt every public one, and each note
// auth.md adds is about a member tool that exists.
func TestToolsListed(t *testing.T) {
	set := mustBuild(t, testSite(), testFeed())
	md, llms := body(t, set, sitepath.AuthGuide), body(t, set, sitepath.LLMs)
	member := map[string]bool{}
	for _, tool := range mcpserver.Tools() {
		member[tool.Name] = tool.Member
		if !strings.Contains(md, "`"+tool.Name+"`") {
			t.Errorf("auth.md does not name %s", tool.Name)
		}
		if !tool.Member && !strings.Contains(llms, tool.Name) {
			t.Errorf("llms.txt does not name the public tool %s", tool.Name)
		}
	}
	for name := range toolNotes {
		if !member[name] {
			t.Errorf("toolNotes has a note on %s, which is no member tool", name)
		}
	}
}
