package mcpserver

import (
	"fmt"
	"slices"
	"strings"
)

// instructions is what an agent reads first: which school this is, what
// it can do without signing in, and exactly how to sign in for more.
func (s *mcpServer) instructions() string {
	o := s.opts
	var public, member, scopes []string
	for _, t := range toolTable {
		if t.member != nil {
			member = append(member, t.def.name+" ("+t.brief+")")
			for _, s := range t.scopes {
				if !slices.Contains(scopes, s) {
					scopes = append(scopes, s)
				}
			}
		} else {
			public = append(public, t.def.name+" "+t.brief)
		}
	}
	return fmt.Sprintf(`This is the MCP server of %[1]s (%[2]s), an online course school.

Public tools, no sign-in needed: %[4]s. Prices are amounts in the main unit of the given currency (49 with EUR means 49.00 euros); an item without a price has none published. Every item has a url: send people there to buy, book or enrol. The same items are MCP resources (resources/list, resources/read, no sign-in needed): school://courses/{slug} reads as get_course returns it, and events, plans and products are at school://events/{slug}, school://plans/{slug} and school://products/{slug}.

Member tools: %[5]s are available once the client signs in with OAuth 2.0. The protected resource metadata at %[3]s names the authorization server; use the authorization code flow with PKCE, resource=%[2]s and scope %[6]s, then send the access token as "Authorization: Bearer <token>" with every request to this endpoint.`,
		o.SiteName, o.Origin, o.ResourceMetadataURL, strings.Join(public, "; "), joinAnd(member), strings.Join(scopes, " "))
}

// joinAnd joins a list as a sentence does: "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// signInNeeded is the tool error for a member tool called anonymously,
// e.g. by a client that cached a member's tool list.
func (s *mcpServer) signInNeeded(tool string) string {
	var scope string
	if t := toolNamed(tool); t != nil {
		scope = strings.Join(t.scopes, " ")
	}
	return fmt.Sprintf("%s needs a signed-in member of %s. Sign in with OAuth 2.0: the protected resource metadata at %s names the authorization server; request resource=%s and scope %s, then call %s again with the header \"Authorization: Bearer <access token>\".",
		tool, s.opts.SiteName, s.opts.ResourceMetadataURL, s.opts.Origin, scope, tool)
}
