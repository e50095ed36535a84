package demoschool

import (
	"bytes"
	"fmt"
	"html/template"
	"log"
	"net/http"
	"strings"
)

// layout is shared by every HTML page; each page template defines "title"
// and "body".
const layout = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{template "title" .}} · {{.SchoolName}}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#222}
header{display:flex;justify-content:space-between;align-items:baseline;border-bottom:1px solid #ddd;margin-bottom:1rem}
header a{color:inherit;text-decoration:none}
.muted{color:#666}.error{color:#b00020}
form.inline{display:inline}
label{display:block;margin:.5rem 0}
input[type=email],input[type=password]{width:100%;max-width:20rem;padding:.3rem}
</style>
</head>
<body>
<header>
<h1><a href="/">{{.SchoolName}}</a></h1>
<nav>{{if .Viewer}}<span class="muted">{{.Viewer.Name}}</span>
<form class="inline" method="post" action="/logout"><button type="submit" id="logout">Sign out</button></form>
{{else}}<a href="/login">Sign in</a>{{end}}</nav>
</header>
<main>
{{template "body" .}}
</main>
</body>
</html>
`

// pageData is what every page template receives; Data is the page's own.
type pageData struct {
	SchoolName string
	Viewer     *User
	Data       any
}

var funcs = template.FuncMap{
	"price": formatPrice,
	"when":  formatWhen,
	"join":  strings.Join,
}

// newPage parses one page against the shared layout. It panics on a bad
// template, which every test run catches: the templates are constants.
func newPage(name, body string) *template.Template {
	t := template.Must(template.New(name).Funcs(funcs).Parse(layout))
	return template.Must(t.Parse(body))
}

// render writes a page with status. It renders into a buffer first, so a
// template error becomes a clean 500 instead of half a page.
func render(w http.ResponseWriter, status int, t *template.Template, data pageData) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		log.Printf("demoschool: rendering %s: %v", t.Name(), err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// Pages show who is signed in, so no shared cache may keep them.
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	h.Set("Content-Length", fmt.Sprint(buf.Len()))
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
