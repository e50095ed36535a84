package sitedocs

import "github.com/schoolgate/schoolgate/sitepath"

// resourcePaths are the protected resources: the member Account API and
// the MCP server, which also serves anonymous callers.
func resourcePaths(s Site) obj {
	return obj{
		{sitepath.AccountAPI, onPost(operation{tag: "Account", id: "accountGraphQL",
			summary: "Member Account API (GraphQL)",
			description: "Reads the signed-in member's data: `viewer { id email enrolledCourses(first: N) { nodes { slug " +
				"expireDate hasLifetimeAccess lastWatchedLecture { lectureId positionSeconds } } } }`, and the member's orders " +
				"and event registrations. The token must carry `account:read` and be bound to " + s.Issuer +
				" (`resource`). There is no anonymous mode: a request without a token gets 401 `invalid_token`.",
			security:   oauthScopes("account:read"),
			parameters: dpopParams(s),
			requestBody: requiredBody(obj{{"application/json", obj{
				{"schema", schemaRef("GraphQLRequest")},
				{"example", obj{{"query", exampleViewerQuery}}},
			}}}),
			responses: protectedResponses(jsonResponse("GraphQL result", "GraphQLResponse")),
		})},
		{sitepath.MCP, onPost(operation{tag: "MCP", id: "mcp",
			summary: "MCP server (Streamable HTTP, stateless)",
			description: "JSON-RPC 2.0 messages of the Model Context Protocol. Without a token the request is served as " +
				"anonymous with the public catalog tools. A member token of this origin (the same one the Account API " +
				"accepts) adds the member tools. A token that is not valid here gets 401 `invalid_token`; it is never " +
				"served as anonymous. A `tools/call` of a member tool with a valid token that lacks a scope the call " +
				"needs (`account:read`; also `account:write` for a mutation through `account_query`), or with an " +
				"operator token, gets 403 `insufficient_scope` naming every scope the call needs, as the Account API does.",
			// No security requirement, or a member token.
			security:    []obj{{}, {{"oauth2", []string{"account:read"}}}},
			parameters:  dpopParams(s),
			requestBody: jsonBody("JSONRPCMessage"),
			responses: obj{
				{"200", response("JSON-RPC response, as JSON or as a server-sent event stream").with("content",
					jsonContent(schemaRef("JSONRPCMessage")).with("text/event-stream", obj{{"schema", str("")}}))},
				{"202", response("Notification or response accepted")},
				{"401", ref("responses", "InvalidToken")},
				{"403", response("A member tool called with a token that lacks a scope the call needs " +
					"(insufficient_scope, with WWW-Authenticate), or an Origin or Host not allowed (DNS-rebinding protection)")},
			},
		})},
	}
}

// documentPaths are the documents this package renders.
func documentPaths(Site) obj {
	var paths obj
	for _, d := range []struct{ path, id, summary, contentType string }{
		{sitepath.OpenAPI, "getOpenAPI", "This OpenAPI document", typeJSON},
		{sitepath.AuthGuide, "getAuthGuide", "Authentication walkthrough for this site (Markdown)", typeMarkdown},
		{sitepath.LLMs, "getLLMsTxt", "Content index for agents (llmstxt.org format)", typeText},
		{sitepath.Pricing, "getPricing", "What the site sells, with prices (Markdown)", typeMarkdown},
	} {
		paths = paths.with(d.path, onGet(operation{tag: "Documents", summary: d.summary, id: d.id,
			parameters: []obj{{{"name", "If-None-Match"}, {"in", "header"}, {"required", false},
				{"schema", str("")}, {"description", "An ETag from an earlier response"}}},
			responses: obj{
				{"200", response("The document").
					with("headers", obj{{"ETag", ref("headers", "ETag")}, {"Cache-Control", ref("headers", "DocumentCache")}}).
					with("content", content(d.contentType, str("")))},
				{"304", response("Not modified").with("headers", obj{{"ETag", ref("headers", "ETag")}})},
				{"503", response("`temporarily_unavailable`: the school is starting and is still loading its catalog "+
					"(for this document also its admin API description); ask again after Retry-After").
					with("headers", obj{{"Retry-After", ref("headers", "RetryAfter")}, {"Cache-Control", ref("headers", "NoStore")}}).
					with("content", jsonContent(schemaRef("OAuthError")))},
			},
		}))
	}
	return paths
}

// protectedResponses are the answers of an operation that needs a
// bearer token: ok, or the challenges.
func protectedResponses(ok obj) obj {
	return obj{
		{"200", ok},
		{"401", ref("responses", "InvalidToken")},
		{"403", ref("responses", "InsufficientScope")},
	}
}
