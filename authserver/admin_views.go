package authserver

import (
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
)

// Views of the admin area. Every value reaches the page through
// html/template, so names, redirect URIs and client ids (which are URLs
// for metadata-document clients) are escaped for their context.

// adminPage is what every admin page carries.
type adminPage struct {
	Title, Person, CSRF string
	// Notice confirms a completed action; Error explains a refused form.
	Notice, Error string
}

// Paths lets templates name the area's routes.
func (adminPage) Paths() adminPaths { return theAdminPaths }

type adminPaths struct {
	Overview, Switch, New, Edit, Secret, Delete, Review string
}

var theAdminPaths = adminPaths{
	Overview: sitepath.AdminApplications, Switch: adminPathSwitch, New: adminPathNew,
	Edit: adminPathEdit, Secret: adminPathSecret, Delete: adminPathDelete, Review: adminPathReview,
}

type adminOverview struct {
	adminPage
	Enabled                  bool
	Apps, Metadata, Loopback []ClientInfo
}

type scopeChoice struct {
	ID, Name, Words string
	Checked         bool
}

type adminAppForm struct {
	adminPage
	// ClientID is set when editing.
	ClientID, Name, RedirectURIs string
	Confidential                 bool
	Scopes                       []scopeChoice
	FormNonce                    string
}

type adminSecretView struct {
	adminPage
	ClientID, Name, Secret, AuthMethod, Issuer string
	Scopes, RedirectURIs                       []string
	Created                                    bool
}

type adminDeleteView struct {
	adminPage
	Client   ClientInfo
	Loopback bool
}

type adminReviewView struct {
	adminPage
	Client   ClientInfo
	Scopes   []scopeChoice
	Reviewed bool
}

// page is what every admin page shows.
func (a *adminCtx) page(title string) adminPage {
	return adminPage{Title: title, Person: personLabel(a.id), CSRF: a.csrf}
}

func formatAdminTime(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func scopeChoices(checked []string) []scopeChoice {
	var out []scopeChoice
	for i, sc := range memberAppScopes() {
		out = append(out, scopeChoice{ID: "scope-" + strconv.Itoa(i), Name: sc,
			Words: policy.ScopeDescription(sc), Checked: slices.Contains(checked, sc)})
	}
	return out
}

const adminLayout = `{{define "layout"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · Developers</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222;line-height:1.45}
.muted{color:#555;font-size:.9rem} code{word-break:break-all}
nav{margin-bottom:1rem} section{border:1px solid #ddd;border-radius:8px;padding:1rem 1.5rem;margin:1.5rem 0}
table{border-collapse:collapse;width:100%} th,td{text-align:left;vertical-align:top;padding:.4rem;border-bottom:1px solid #eee}
ul.plain{list-style:none;padding:0;margin:0}
.notice{background:#e8f3e8;border:1px solid #7a7;padding:.6rem 1rem;border-radius:6px}
.error{background:#fbeaea;border:1px solid #c66;padding:.6rem 1rem;border-radius:6px}
.secret{background:#fff8e0;border:1px solid #cb4;padding:.6rem 1rem;border-radius:6px}
label{font-weight:600} fieldset{border:1px solid #ddd;border-radius:6px;margin:1rem 0}
fieldset label{font-weight:normal} input[type=text],textarea{width:100%;max-width:40rem;font:inherit;padding:.3rem}
button{font-size:1rem;padding:.5rem 1rem;border-radius:6px;border:1px solid #888;cursor:pointer}
.primary{background:#1a5fb4;color:#fff;border-color:#1a5fb4} .danger{background:#a51d2d;color:#fff;border-color:#a51d2d}
</style></head><body>
<nav aria-label="Breadcrumb" class="muted">Developers › <a href="{{.Paths.Overview}}">OAuth applications</a>
· Signed in as <strong id="person">{{.Person}}</strong></nav>
<main>
{{if .Notice}}<p class="notice" role="status" id="notice">{{.Notice}}</p>{{end}}
{{if .Error}}<p class="error" role="alert" id="error">{{.Error}}</p>{{end}}
{{template "content" .}}
</main></body></html>{{end}}`

func adminTemplate(name, content string) *template.Template {
	t := template.Must(template.New(name).Parse(adminLayout))
	template.Must(t.New("content").Parse(content))
	return t.Lookup("layout")
}

var overviewTmpl = adminTemplate("overview", `<h1>OAuth applications</h1>
<section aria-labelledby="mcp-heading">
<h2 id="mcp-heading">MCP connections <span class="muted">(beta)</span></h2>
<p>MCP connections is <strong id="mcp-state">{{if .Enabled}}on{{else}}off{{end}}</strong>.
While it is on, you can create member applications here: applications that act for one signed-in
member of this school (students included), such as AI assistants connecting over MCP.</p>
{{if not .Enabled}}<p>While it is off, member applications you created cannot authorize; they are kept
and work again once it is switched on.</p>{{end}}
<form method="post" action="{{.Paths.Switch}}">
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
<input type="hidden" name="enabled" value="{{if .Enabled}}off{{else}}on{{end}}">
<button type="submit" id="mcp-toggle" class="{{if not .Enabled}}primary{{end}}">{{if .Enabled}}Turn off MCP connections{{else}}Turn on MCP connections{{end}}</button>
</form>
</section>
{{if .Enabled}}
<section aria-labelledby="apps-heading">
<h2 id="apps-heading">Member applications</h2>
<p>You choose each application's scopes and pass its <code>client_id</code> to its developer. Anyone with a
role at this school may then authorize it.</p>
<p><a href="{{.Paths.New}}" id="new-app">Create a member application</a></p>
{{if .Apps}}<table id="apps"><thead><tr><th scope="col">Name</th><th scope="col">client_id</th><th scope="col">Type</th>
<th scope="col">Redirect URIs</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Actions</th></tr></thead><tbody>
{{range .Apps}}<tr><td>{{.Name}}</td><td><code>{{.ClientID}}</code></td><td>{{if .Confidential}}confidential{{else}}public{{end}}</td>
<td><ul class="plain">{{range .RedirectURIs}}<li><code>{{.}}</code></li>{{end}}</ul></td>
<td><ul class="plain">{{range .Scopes}}<li><code>{{.}}</code></li>{{end}}</ul></td><td>{{.Created}}</td>
<td><a href="{{$.Paths.Edit}}?client_id={{.ClientID}}">Edit<span class="muted"> {{.Name}}</span></a><br>
<a href="{{$.Paths.Delete}}?client_id={{.ClientID}}">Delete<span class="muted"> {{.Name}}</span></a></td></tr>
{{end}}</tbody></table>{{else}}<p id="no-apps">No member applications yet.</p>{{end}}
</section>
<section aria-labelledby="metadata-heading">
<h2 id="metadata-heading">Metadata-document clients seen</h2>
<p>Clients whose <code>client_id</code> is the https URL of their own Client ID Metadata Document. While
unreviewed, they may request read and identity scopes only; once you mark one reviewed it may request
the scopes you chose for it.</p>
{{if .Metadata}}<table id="metadata"><thead><tr><th scope="col">client_id (document URL)</th><th scope="col">Name</th>
<th scope="col">Redirect URIs</th><th scope="col">First seen</th><th scope="col">Status</th><th scope="col">May request now</th><th scope="col">Actions</th></tr></thead><tbody>
{{range .Metadata}}<tr><td><code>{{.ClientID}}</code></td><td>{{.Name}}</td>
<td><ul class="plain">{{range .RedirectURIs}}<li><code>{{.}}</code></li>{{end}}</ul></td><td>{{.Created}}</td>
<td>{{if .Reviewed}}reviewed{{else}}not reviewed{{end}}</td>
<td><ul class="plain">{{range .AllowedScopes}}<li><code>{{.}}</code></li>{{end}}</ul></td>
<td><a href="{{$.Paths.Review}}?client_id={{.ClientID}}">Review<span class="muted"> {{.Name}}</span></a></td></tr>
{{end}}</tbody></table>{{else}}<p id="no-metadata">No metadata-document client has been used here yet.</p>{{end}}
</section>
<section aria-labelledby="loopback-heading">
<h2 id="loopback-heading">Command-line and desktop clients</h2>
<p>Clients registered dynamically with loopback redirect URIs (CLI tools, desktop apps, local agents).
They act for an operator. You may delete ones no longer in use.</p>
{{if .Loopback}}<table id="loopback"><thead><tr><th scope="col">Name</th><th scope="col">client_id</th>
<th scope="col">Redirect URIs</th><th scope="col">Registered</th><th scope="col">Actions</th></tr></thead><tbody>
{{range .Loopback}}<tr><td>{{.Name}}</td><td><code>{{.ClientID}}</code></td>
<td><ul class="plain">{{range .RedirectURIs}}<li><code>{{.}}</code></li>{{end}}</ul></td><td>{{.Created}}</td>
<td><a href="{{$.Paths.Delete}}?client_id={{.ClientID}}">Delete<span class="muted"> {{.Name}}</span></a></td></tr>
{{end}}</tbody></table>{{else}}<p id="no-loopback">No command-line or desktop client is registered.</p>{{end}}
</section>
{{end}}`)

var appFormTmpl = adminTemplate("app-form", `<h1>{{.Title}}</h1>
<p>A member application acts for one signed-in member of this school. Anyone with a role at the school,
students included, may authorize it for the scopes you choose.</p>
<form method="post" action="{{if .ClientID}}{{.Paths.Edit}}{{else}}{{.Paths.New}}{{end}}">
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
{{if .ClientID}}<input type="hidden" name="client_id" value="{{.ClientID}}">
<p>client_id: <code id="client-id">{{.ClientID}}</code> ({{if .Confidential}}confidential, <code>client_secret_post</code>{{else}}public, auth method <code>none</code>{{end}})</p>
{{else}}<input type="hidden" name="form_nonce" value="{{.FormNonce}}">{{end}}
<p><label for="name">Name</label><br>
<input type="text" id="name" name="name" value="{{.Name}}" required maxlength="200" aria-describedby="name-help"><br>
<span id="name-help" class="muted">Shown to members on the consent page.</span></p>
<p><label for="redirect_uris">Redirect URIs, one per line</label><br>
<textarea id="redirect_uris" name="redirect_uris" rows="4" required aria-describedby="redirect-help">{{.RedirectURIs}}</textarea><br>
<span id="redirect-help" class="muted">Each must be an absolute <code>https://</code> URL, or an <code>http://</code> URL on a
loopback address (<code>127.0.0.1</code>, <code>[::1]</code> or <code>localhost</code>, any port). No fragment (<code>#</code>).</span></p>
<fieldset><legend>Scopes it may request</legend>
{{range .Scopes}}<p><input type="checkbox" id="{{.ID}}" name="scope" value="{{.Name}}"{{if .Checked}} checked{{end}}>
<label for="{{.ID}}"><code>{{.Name}}</code>: {{.Words}}</label></p>
{{end}}</fieldset>
{{if not .ClientID}}<fieldset><legend>Client type</legend>
<p><input type="radio" id="type-public" name="client_type" value="public"{{if not .Confidential}} checked{{end}}>
<label for="type-public">Public: cannot keep a secret (browser, mobile or desktop app); authenticates with <code>none</code> and PKCE</label></p>
<p><input type="radio" id="type-confidential" name="client_type" value="confidential"{{if .Confidential}} checked{{end}}>
<label for="type-confidential">Confidential: a server that keeps a secret; authenticates with <code>client_secret_post</code> and PKCE</label></p>
</fieldset>{{end}}
<p><button type="submit" class="primary">{{if .ClientID}}Save changes{{else}}Create application{{end}}</button>
<a href="{{.Paths.Overview}}">Cancel</a></p>
</form>
{{if .ClientID}}
{{if .Confidential}}<section aria-labelledby="secret-heading"><h2 id="secret-heading">Client secret</h2>
<p>The secret was shown once, when it was created. Regenerating it makes the current secret stop working at once.</p>
<form method="post" action="{{.Paths.Secret}}">
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
<input type="hidden" name="client_id" value="{{.ClientID}}">
<button type="submit" id="regenerate">Regenerate secret</button></form></section>{{end}}
<p><a href="{{.Paths.Delete}}?client_id={{.ClientID}}">Delete this application</a></p>
{{end}}`)

var secretTmpl = adminTemplate("secret", `<h1>{{.Title}}</h1>
<dl>
<dt>Name</dt><dd id="app-name">{{.Name}}</dd>
<dt><code>client_id</code></dt><dd><code id="client-id">{{.ClientID}}</code></dd>
{{if .Secret}}<dt><code>client_secret</code></dt><dd><code id="client-secret">{{.Secret}}</code></dd>{{end}}
<dt>Token endpoint auth method</dt><dd><code>{{.AuthMethod}}</code></dd>
<dt>Redirect URIs</dt><dd><ul class="plain">{{range .RedirectURIs}}<li><code>{{.}}</code></li>{{end}}</ul></dd>
<dt>Scopes</dt><dd>{{range .Scopes}}<code>{{.}}</code> {{end}}</dd>
<dt>Resource (RFC 8707)</dt><dd><code>{{.Issuer}}</code></dd>
</dl>
{{if .Secret}}<p class="secret" role="alert"><strong>Copy the secret now.</strong> It is shown only this once:
the school keeps only a hash of it. If it is lost, regenerate it from the application's page.</p>{{end}}
<p>Give the <code>client_id</code>{{if .Secret}} and the secret (through a safe channel){{end}} to the application's
developer. It authorizes at <code>{{.Issuer}}/oauth/authorize</code> with PKCE and <code>resource={{.Issuer}}</code>.</p>
<p><a href="{{.Paths.Edit}}?client_id={{.ClientID}}">Back to the application</a> · <a href="{{.Paths.Overview}}">All OAuth applications</a></p>`)

var deleteTmpl = adminTemplate("delete", `<h1>{{.Title}}?</h1>
<p>{{if .Loopback}}Command-line or desktop client{{else}}Member application{{end}} <strong>{{.Client.Name}}</strong>,
<code>client_id</code> <code id="client-id">{{.Client.ClientID}}</code>, registered {{.Client.Created}}.</p>
<p>Deleting it revokes every access it was granted: its tokens stop working at once and it can no longer
authorize.{{if .Loopback}} The tool can register again later.{{else}} This cannot be undone; a new application
would get a new <code>client_id</code>.{{end}}</p>
<form method="post" action="{{.Paths.Delete}}">
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
<input type="hidden" name="client_id" value="{{.Client.ClientID}}">
<p><button type="submit" class="danger" id="confirm-delete">Delete {{.Client.Name}}</button>
<a href="{{.Paths.Overview}}">Cancel</a></p>
</form>`)

var reviewTmpl = adminTemplate("review", `<h1>{{.Title}}</h1>
<dl>
<dt><code>client_id</code> (metadata document)</dt><dd><code id="client-id">{{.Client.ClientID}}</code></dd>
<dt>Name given by the document</dt><dd>{{.Client.Name}}</dd>
<dt>Redirect URIs</dt><dd><ul class="plain">{{range .Client.RedirectURIs}}<li><code>{{.}}</code></li>{{end}}</ul></dd>
<dt>First seen</dt><dd>{{.Client.Created}}</dd>
<dt>Status</dt><dd id="status">{{if .Client.Reviewed}}reviewed{{else}}not reviewed{{end}}</dd>
</dl>
<p>Check the document's host and redirect URIs before marking the client reviewed. While it is not reviewed it may
request only the read and identity scopes among those chosen below; once reviewed, all of them.</p>
<form method="post" action="{{.Paths.Review}}">
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
<input type="hidden" name="client_id" value="{{.Client.ClientID}}">
<fieldset><legend>Scopes it may get</legend>
{{range .Scopes}}<p><input type="checkbox" id="{{.ID}}" name="scope" value="{{.Name}}"{{if .Checked}} checked{{end}}>
<label for="{{.ID}}"><code>{{.Name}}</code>: {{.Words}}</label></p>
{{end}}</fieldset>
<fieldset><legend>Status</legend>
<p><input type="radio" id="status-reviewed" name="status" value="reviewed"{{if .Reviewed}} checked{{end}}>
<label for="status-reviewed">Reviewed: may request every scope chosen above</label></p>
<p><input type="radio" id="status-unreviewed" name="status" value="unreviewed"{{if not .Reviewed}} checked{{end}}>
<label for="status-unreviewed">Not reviewed: read and identity scopes only</label></p>
</fieldset>
<p><button type="submit" class="primary">Save</button> <a href="{{.Paths.Overview}}">Cancel</a></p>
</form>`)

var adminErrorTmpl = template.Must(template.New("admin-error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>OAuth applications · Developers</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:34rem;margin:4rem auto;padding:0 1rem;color:#222}</style>
</head><body><main><h1>OAuth applications</h1><p id="error" role="alert">{{.Msg}}</p>
<p><a href="{{.Back}}">Back to OAuth applications</a></p></main></body></html>`))

// adminError answers with a plain page carrying the area's headers.
func (s *Server) adminError(w http.ResponseWriter, status int, msg string) {
	setPageHeaders(w, "")
	w.WriteHeader(status)
	_ = adminErrorTmpl.Execute(w, struct{ Msg, Back string }{msg, sitepath.AdminApplications})
}
