package authserver

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"strconv"

	"github.com/schoolgate/schoolgate/policy"
)

// The gateway's HTML pages are html/template files under pages/: one
// layout (layout.html) around each page, the admin area's frame
// (admin.html) around its pages, and one stylesheet (stylesheet.go).
// Every value reaches a page through html/template, so names, redirect
// URIs and client ids are escaped for their context.

//go:embed pages
var pageFiles embed.FS

var (
	consentTmpl  = parsePage("consent.html")
	errorTmpl    = parsePage("error.html")
	overviewTmpl = parsePage("admin.html", "admin_overview.html")
	appFormTmpl  = parsePage("admin.html", "admin_app_form.html")
	secretTmpl   = parsePage("admin.html", "admin_secret.html")
	deleteTmpl   = parsePage("admin.html", "admin_delete.html")
	reviewTmpl   = parsePage("admin.html", "admin_review.html")
	peopleTmpl   = parsePage("admin.html", "admin_people.html")
	accountTmpl  = parsePage("account_applications.html")
)

// parsePage is the layout with the page's files; the later files
// define the layout's blocks. It panics on a bad file, which every test
// run catches: the files are part of the binary.
func parsePage(files ...string) *template.Template {
	t := template.Must(template.New("layout.html").
		Funcs(template.FuncMap{"stylesheet": func() string { return stylesheetPath }}).
		ParseFS(pageFiles, "pages/layout.html"))
	for _, f := range files {
		template.Must(t.ParseFS(pageFiles, "pages/"+f))
	}
	return t
}

// setPageHeaders protects the gateway's own HTML pages: no framing
// (clickjacking of the approve button), no referrer leaking the request,
// no caching of per-person pages, and nothing loaded or run but the
// stylesheet of this origin. formTargets are the origins a form may be
// sent to besides this one (the consent form answers with a redirect to
// the client).
func setPageHeaders(w http.ResponseWriter, formTargets string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; "+
		"form-action 'self'"+formTargets+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	noStore(w)
}

func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

// renderPage renders a page whole before anything is sent, so that a
// template error can still become the error page instead of half a page.
func renderPage(t *template.Template, v any) ([]byte, error) {
	var buf bytes.Buffer
	err := t.Execute(&buf, v)
	return buf.Bytes(), err
}

// errorView is the one error page: what went wrong, for a sign-in request
// or, with Admin, in the admin area, whose pages it then leads back to.
// Unavailable says the request may succeed in a moment.
type errorView struct {
	Message string
	Admin   bool
	// Account: the person's own area, whose page it then leads back to.
	Account     bool
	Unavailable bool
}

// Overview is where the admin area's error page leads back to.
func (errorView) Overview() string { return theAdminPaths.Overview }

// Applications is where the person's area's error page leads back to.
func (errorView) Applications() string { return theAccountPaths.Applications }

// showError answers with the error page.
func (s *Server) showError(w http.ResponseWriter, status int, v errorView) {
	setPageHeaders(w, "")
	page, err := renderPage(errorTmpl, v)
	if err != nil {
		s.cfg.Logger.Error("rendering the error page", "error", err)
		http.Error(w, v.Message, status)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(page)
}

// errorPage answers the person directly; used where redirecting to the
// client is not safe.
func (s *Server) errorPage(w http.ResponseWriter, status int, msg string) {
	s.showError(w, status, errorView{Message: msg})
}

// unavailablePage answers a browser whose request the store failed: 503
// with Retry-After, and never a redirect to the client, which would end
// the authorization with an error the client acts on (and the state it
// consumes) when a retry in a moment would have succeeded. msg tells the
// person how to retry; the store's error goes to the log only.
func (s *Server) unavailablePage(w http.ResponseWriter, admin bool, msg, what string, err error) {
	s.cfg.Logger.Error("store failed: "+what, "error", err)
	w.Header().Set("Retry-After", strconv.Itoa(policy.RetryAfterUnavailable))
	s.showError(w, http.StatusServiceUnavailable, errorView{Message: msg, Admin: admin, Unavailable: true})
}

// What a person is told to do when the store failed, by where they are.
const (
	retryReload = "The school's sign-in is temporarily unavailable. Wait a moment, then reload this page."
	retryForm   = "Your answer could not be saved: the school's sign-in is temporarily unavailable. Wait a moment, then go back and answer again."
	retryStart  = "The school's sign-in is temporarily unavailable. Wait a moment, then start again from the application."
	retryAdmin  = "The admin area is temporarily unavailable: the school's database did not answer. Wait a moment, then try again."
)
