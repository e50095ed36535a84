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
	consentTmpl  = parsePage(Languages, "consent.html")
	errorTmpl    = parsePage(Languages, "error.html")
	accountTmpl  = parsePage(Languages, "account_applications.html")
	confirmTmpl  = parsePage(Languages, "account_disconnect.html")
	overviewTmpl = parseAdminPage("admin_overview.html")
	appFormTmpl  = parseAdminPage("admin_app_form.html")
	secretTmpl   = parseAdminPage("admin_secret.html")
	deleteTmpl   = parseAdminPage("admin_delete.html")
	reviewTmpl   = parseAdminPage("admin_review.html")
	peopleTmpl   = parseAdminPage("admin_people.html")
	activityTmpl = parseAdminPage("admin_activity.html")
	usageTmpl    = parseAdminPage("admin_usage.html")
)

// pageSet is one page in each of its languages: each is parsed with
// the functions of its language (pageFuncs), so that t, lang and when
// need no language argument.
type pageSet map[string]*template.Template

// in is the page in lang, else in English.
func (p pageSet) in(lang string) *template.Template {
	if t, ok := p[lang]; ok {
		return t
	}
	return p[Languages[0]]
}

// parsePage is the layout with the page's files, in each of langs; the
// later files define the layout's blocks. It panics on a bad file, which
// every test run catches: the files are part of the binary.
func parsePage(langs []string, files ...string) pageSet {
	set := make(pageSet, len(langs))
	for _, lang := range langs {
		t := template.Must(template.New("layout.html").Funcs(pageFuncs(lang)).
			ParseFS(pageFiles, "pages/layout.html"))
		for _, f := range files {
			template.Must(t.ParseFS(pageFiles, "pages/"+f))
		}
		set[lang] = t
	}
	return set
}

// parseAdminPage is an admin page in the admin area's frame.
func parseAdminPage(file string) pageSet {
	return parsePage(Languages, "admin.html", file)
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
	// Key names the message in the catalog, Args fill its placeholders;
	// Message is the text (showError sets it from Key when there is one).
	Key     string
	Args    []any
	Message string
	// Detail is a technical detail for a developer, in English: shown
	// apart from the message, marked as such, never put into it.
	Detail string
	Admin  bool
	// School names the school in the admin area's error page.
	School string
	// Account: the person's own area, whose page it then leads back to.
	Account     bool
	Unavailable bool
}

// Overview is where the admin area's error page leads back to.
func (errorView) Overview() string { return theAdminPaths.Overview }

// Applications is where the person's area's error page leads back to.
func (errorView) Applications() string { return theAccountPaths.Applications }

// showError answers with the error page, in the language r asks for.
func (s *Server) showError(w http.ResponseWriter, r *http.Request, status int, v errorView) {
	setPageHeaders(w, "")
	lang := s.pageLang(r)
	setLanguageHeaders(w, lang)
	if v.Admin {
		v.School = s.schoolName()
	}
	if v.Key != "" {
		v.Message = msg(lang, v.Key, v.Args...)
	}
	page, err := renderPage(errorTmpl.in(lang), v)
	if err != nil {
		s.cfg.Logger.Error("rendering the error page", "error", err)
		http.Error(w, v.Message, status)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(page)
}

// errorPage answers the person directly with the message key (and its
// placeholders' name-value pairs); used where redirecting to the client
// is not safe.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, status int, key string, args ...any) {
	s.showError(w, r, status, errorView{Key: key, Args: args})
}

// unavailablePage answers a browser whose request the store failed: 503
// with Retry-After, and never a redirect to the client, which would end
// the authorization with an error the client acts on (and the state it
// consumes) when a retry in a moment would have succeeded. key tells the
// person how to retry; the store's error goes to the log only.
func (s *Server) unavailablePage(w http.ResponseWriter, r *http.Request, admin bool, key, what string, err error) {
	s.cfg.Logger.Error("store failed: "+what, "error", err)
	w.Header().Set("Retry-After", strconv.Itoa(policy.RetryAfterUnavailable))
	s.showError(w, r, http.StatusServiceUnavailable, errorView{Key: key, Admin: admin, Unavailable: true})
}

// What a person is told to do when the store failed, by where they are
// (message keys).
const (
	retryReload = "error.retry_reload"
	retryForm   = "error.retry_form"
	retryStart  = "error.retry_start"
	retryAdmin  = "error.retry_admin"
)
