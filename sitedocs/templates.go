package sitedocs

import (
	"bytes"
	"embed"
	"strings"
	"text/template"

	"github.com/schoolgate/schoolgate/mcpserver"
	"github.com/schoolgate/schoolgate/sitepath"
)

// The Markdown documents are text/template files under templates/, named
// as the documents they render, so their wording is reviewed as Markdown.
// A template prints the site's own values (checked by normalizeSite) as
// they are; anything from the catalog reaches it escaped already, or
// through md.

//go:embed templates
var templateFiles embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"md":    escapeMarkdown,
	"shell": shellQuote,
}).ParseFS(templateFiles, "templates/*"))

// render executes the template of one document. The document ends with
// exactly one newline, however its last section ended.
func render(name string, data any) ([]byte, error) {
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, data); err != nil {
		return nil, err
	}
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n'), nil
}

// page is what every document's template starts from: the site, the
// paths of sitepath by name, as paths and as absolute URLs, and the MCP
// server's tools.
type page struct {
	Site
	Path, URL links
	Tools     toolLists
}

func newPage(s Site) page {
	return page{Site: s, Path: linksAt(""), URL: linksAt(s.Issuer), Tools: mcpTools()}
}

// toolLists are the MCP server's tools as the documents list them, in
// mcpserver's order: the public ones, and the member ones.
type toolLists struct {
	Public []string
	Member []memberTool
}

// memberTool is a member tool in a sentence: its name, what the
// documents say of it (toolNotes), the scopes every call of it needs and
// whether it ends the list.
type memberTool struct {
	Name, Note, Scopes string
	Last               bool
}

// toolNotes are what auth.md says of a member tool after its name.
var toolNotes = map[string]string{
	"account_query": "read-only GraphQL against the member's own Account API; mutations need `account:write`",
}

func mcpTools() toolLists {
	var l toolLists
	for _, t := range mcpserver.Tools() {
		if t.Member {
			l.Member = append(l.Member, memberTool{Name: t.Name, Note: toolNotes[t.Name], Scopes: strings.Join(t.Scopes, " ")})
		} else {
			l.Public = append(l.Public, t.Name)
		}
	}
	if n := len(l.Member); n > 0 {
		l.Member[n-1].Last = true
	}
	return l
}

// links names the paths of the site the documents mention.
type links struct {
	ProtectedResource, ASMetadata, OIDCConfig, JWKS                    string
	Authorize, Token, UserInfo, Revoke, Introspect, Register           string
	AdminApplications, Account, MCP, OpenAPI, AuthGuide, LLMs, Pricing string
	AccountApplications                                                string
}

// linksAt is every path below base: the paths themselves for "", the
// absolute URLs for the issuer.
func linksAt(base string) links {
	return links{
		ProtectedResource:   base + sitepath.ProtectedResource,
		ASMetadata:          base + sitepath.ASMetadata,
		OIDCConfig:          base + sitepath.OIDCConfig,
		JWKS:                base + sitepath.JWKS,
		Authorize:           base + sitepath.Authorize,
		Token:               base + sitepath.Token,
		UserInfo:            base + sitepath.UserInfo,
		Revoke:              base + sitepath.Revoke,
		Introspect:          base + sitepath.Introspect,
		Register:            base + sitepath.Register,
		AdminApplications:   base + sitepath.AdminApplications,
		AccountApplications: base + sitepath.AccountApplications,
		Account:             base + sitepath.AccountAPI,
		MCP:                 base + sitepath.MCP,
		OpenAPI:             base + sitepath.OpenAPI,
		AuthGuide:           base + sitepath.AuthGuide,
		LLMs:                base + sitepath.LLMs,
		Pricing:             base + sitepath.Pricing,
	}
}

// shellQuote quotes s for a POSIX shell in the examples.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
