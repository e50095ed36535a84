package demoschool

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"log"
	"net/http"
	"strings"
	"time"
)

// The pages are html/template files under templates/: layout.html around
// each page, which defines "title" and "body", and one stylesheet served
// by the school itself, so the pages allow no inline style.

//go:embed templates
var templateFiles embed.FS

// stylesheetPath is where the school serves templates/school.css.
const stylesheetPath = "/static/school.css"

var stylesheet = mustReadTemplateFile("school.css")

func mustReadTemplateFile(name string) []byte {
	b, err := templateFiles.ReadFile("templates/" + name)
	if err != nil {
		panic("demoschool: " + err.Error())
	}
	return b
}

// pageData is what every page template receives; Data is the page's own.
type pageData struct {
	SchoolName string
	Viewer     *User
	Data       any
}

var funcs = template.FuncMap{
	"price":      formatPrice,
	"when":       formatWhen,
	"join":       strings.Join,
	"stylesheet": func() string { return stylesheetPath },
}

// newPage parses one page file with the layout. It panics on a bad
// template, which every test run catches: the files are part of the binary.
func newPage(file string) *template.Template {
	return template.Must(template.New("layout.html").Funcs(funcs).
		ParseFS(templateFiles, "templates/layout.html", "templates/"+file))
}

// serveStylesheet serves the pages' stylesheet; browsers check back
// after five minutes, so a changed stylesheet shows soon.
func serveStylesheet(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/css; charset=utf-8")
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "school.css", time.Time{}, bytes.NewReader(stylesheet))
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
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
