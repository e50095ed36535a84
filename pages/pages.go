// Package pages is one school's HTML pages: the consent page and the
// error page that the authorization server shows in its flows, the
// person's own area (sitepath.AccountPages: the applications they
// connected) and the operator's admin area (sitepath.Admin), in the
// languages of package i18n. The pages stand on the authorization
// server's exported operations, and the server shows them through
// authserver.Pages; its route table dispatches, limits and counts every
// request before a page sees it.
//
// The pages are html/template files under templates/: one layout
// (layout.html) around each page, the admin area's frame (admin.html)
// around its pages, and one stylesheet (stylesheet.go). Every value
// reaches a page through html/template, so names, redirect URIs and
// client ids are escaped for their context.
package pages

import (
	"bytes"
	"context"
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/i18n"
	"github.com/schoolgate/schoolgate/store"
)

// Config is what the pages know of their school beyond its authorization
// server.
type Config struct {
	// SchoolName is the school's name as people know it, asked for at
	// every consent (the catalog may rename the school while the server
	// runs); nil or "" shows the issuer.
	SchoolName func() string
	// SchoolLanguage is the language (one of i18n.Languages) of the
	// pages for a browser whose Accept-Language names none of them; nil
	// or another value means English.
	SchoolLanguage func() string
	// Usage reads the school's usage for the admin area's page: what the
	// store holds and what this instance has not stored yet. nil reads
	// the store alone.
	Usage  func(ctx context.Context) (*store.Usage, error)
	Logger *slog.Logger
	// Now is the clock; tests replace it.
	Now func() time.Time
}

// Pages are one school's pages, on its authorization server.
type Pages struct {
	as  *authserver.Server
	cfg Config
	// adminPageSize is how many rows an admin overview list shows a page.
	adminPageSize int
}

var _ authserver.Pages = (*Pages)(nil)

// New makes the pages of the authorization server as; a school gives it
// to the server as its authserver.Config.Pages.
func New(as *authserver.Server, cfg Config) *Pages {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Usage == nil {
		cfg.Usage = as.StoredUsage
	}
	return &Pages{as: as, cfg: cfg, adminPageSize: defaultAdminPageSize}
}

// schoolName is the name the pages give the school: the configured one,
// else the origin.
func (p *Pages) schoolName() string {
	if p.cfg.SchoolName != nil {
		if name := strings.TrimSpace(p.cfg.SchoolName()); name != "" {
			return name
		}
	}
	return p.as.Issuer()
}

//go:embed templates
var pageFiles embed.FS

var (
	consentTmpl  = parsePage(i18n.Languages, "consent.html")
	errorTmpl    = parsePage(i18n.Languages, "error.html")
	accountTmpl  = parsePage(i18n.Languages, "account_applications.html")
	confirmTmpl  = parsePage(i18n.Languages, "account_disconnect.html")
	overviewTmpl = parseAdminPage("admin_overview.html")
	appFormTmpl  = parseAdminPage("admin_app_form.html")
	secretTmpl   = parseAdminPage("admin_secret.html")
	deleteTmpl   = parseAdminPage("admin_delete.html")
	reviewTmpl   = parseAdminPage("admin_review.html")
	peopleTmpl   = parseAdminPage("admin_people.html")
	activityTmpl = parseAdminPage("admin_activity.html")
	usageTmpl    = parseAdminPage("admin_usage.html")
	doctorTmpl   = parseAdminPage("admin_doctor.html")
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
	return p[i18n.Languages[0]]
}

// parsePage is the layout with the page's files, in each of langs; the
// later files define the layout's blocks. It panics on a bad file, which
// every test run catches: the files are part of the binary.
func parsePage(langs []string, files ...string) pageSet {
	set := make(pageSet, len(langs))
	for _, lang := range langs {
		t := template.Must(template.New("layout.html").Funcs(pageFuncs(lang)).
			ParseFS(pageFiles, "templates/layout.html"))
		for _, f := range files {
			template.Must(t.ParseFS(pageFiles, "templates/"+f))
		}
		set[lang] = t
	}
	return set
}

// parseAdminPage is an admin page in the admin area's frame.
func parseAdminPage(file string) pageSet {
	return parsePage(i18n.Languages, "admin.html", file)
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

// Error answers with the error page the authorization server asks for.
func (p *Pages) Error(w http.ResponseWriter, r *http.Request, status int, e authserver.ErrorPage) {
	p.showError(w, r, status, errorView{Key: e.Key, Args: e.Args, Detail: e.Detail, Unavailable: e.Unavailable})
}

// showError answers with the error page, in the language r asks for.
func (p *Pages) showError(w http.ResponseWriter, r *http.Request, status int, v errorView) {
	setPageHeaders(w, "")
	lang := p.pageLang(r)
	setLanguageHeaders(w, lang)
	if v.Admin {
		v.School = p.schoolName()
	}
	if v.Key != "" {
		v.Message = i18n.Msg(lang, v.Key, v.Args...)
	}
	page, err := renderPage(errorTmpl.in(lang), v)
	if err != nil {
		p.cfg.Logger.Error("rendering the error page", "error", err)
		http.Error(w, v.Message, status)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(page)
}

// errorPage answers with the error page of a sign-in request saying the
// message key (and its placeholders' name-value pairs).
func (p *Pages) errorPage(w http.ResponseWriter, r *http.Request, status int, key string, args ...any) {
	p.showError(w, r, status, errorView{Key: key, Args: args})
}

// What an operator is told to do when the store failed (a message key).
const retryAdmin = "error.retry_admin"
