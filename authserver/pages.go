package authserver

import (
	"html/template"
	"net/http"
)

// setPageHeaders protects the gateway's own HTML pages: no framing
// (clickjacking of the approve button), no referrer leaking the request,
// no caching of per-person pages.
func setPageHeaders(w http.ResponseWriter, formTargets string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; "+
		"form-action 'self'"+formTargets+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	noStore(w)
}

func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

var errorTmpl = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Authorization error</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}</style>
</head><body><h1>This sign-in request cannot continue</h1><p id="error">{{.}}</p></body></html>`))

// errorPage answers the person directly; used where redirecting to the
// client is not safe.
func (s *Server) errorPage(w http.ResponseWriter, status int, msg string) {
	setPageHeaders(w, "")
	w.WriteHeader(status)
	_ = errorTmpl.Execute(w, msg)
}

var consentTmpl = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Allow {{.ClientName}}?</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#222}
.card{border:1px solid #ddd;border-radius:8px;padding:1.5rem}
.muted{color:#666;font-size:.9rem} ul{padding-left:1.2rem} li{margin:.3rem 0}
button{font-size:1rem;padding:.6rem 1.2rem;border-radius:6px;border:1px solid #888;cursor:pointer;margin-right:.5rem}
#approve{background:#1a5fb4;color:#fff;border-color:#1a5fb4}
</style></head><body><div class="card">
<h1>Allow <span id="client-name">{{.ClientName}}</span> to access {{.School}}?</h1>
<p class="muted">Application: <strong>{{.ClientName}}</strong> ({{.ClientHost}})<br>
After you decide, you will be sent to <strong id="redirect-host">{{.RedirectHost}}</strong>.</p>
<p>Signed in as <strong id="person">{{.Person}}</strong>.</p>
{{if .Approved}}<p id="approved-before">You approved this before.{{if .AskEachTime}} This application
receives its answer at an address that does not prove which program is asking (for a command-line or
desktop app, any program on your device could listen there), so you are asked every time.{{end}}</p>{{end}}
<p>It asks to:</p>
<ul id="scopes">{{range .Scopes}}<li><code>{{.Name}}</code>: {{.Words}}{{if .Before}} <span class="before">(approved before)</span>{{end}}</li>{{end}}</ul>
<form method="post" action="{{.Action}}">
<input type="hidden" name="request" value="{{.RequestID}}">
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
<button id="approve" type="submit" name="decision" value="approve">Allow</button>
<button id="deny" type="submit" name="decision" value="deny">Deny</button>
</form></div></body></html>`))

type consentView struct {
	School, ClientName, ClientHost, RedirectHost, Person string
	Scopes                                               []scopeView
	Action, RequestID, CSRF                              string
	// Approved: the person approved every scope before. AskEachTime: the
	// redirect URI does not prove the client, which is why they are asked
	// again.
	Approved, AskEachTime bool
}

// scopeView is one requested scope; Before marks one approved before.
type scopeView struct {
	Name, Words string
	Before      bool
}
