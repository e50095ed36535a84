package authserver

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// The operator's admin area, "Developers → OAuth applications": the MCP connections beta switch, member applications,
// the metadata-document clients seen and the loopback (CLI) clients
// registered. Every page is same-origin HTML for a signed-in operator;
// every form is CSRF-protected and answered with a 303 (post/redirect/get)
// except where a new secret is shown once (see showSecret).
const (
	adminPathSwitch = sitepath.Admin + "/mcp-connections"
	adminPathNew    = sitepath.AdminApplications + "/new"
	adminPathEdit   = sitepath.AdminApplications + "/edit"
	adminPathSecret = sitepath.AdminApplications + "/secret"
	adminPathDelete = sitepath.AdminApplications + "/delete"
	adminPathReview = sitepath.AdminApplications + "/review"
	// The people connected to one application, and ending one's grant.
	adminPathPeople     = sitepath.AdminApplications + "/people"
	adminPathDisconnect = sitepath.AdminApplications + "/people/disconnect"
	// The audit trail of one application or one person.
	adminPathActivity = sitepath.AdminApplications + "/activity"
	// The school's usage.
	adminPathUsage = sitepath.Admin + "/usage"
)

// adminCtx is one admin request by a signed-in operator.
type adminCtx struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	id   *store.Identity
	csrf string
	// lang is the pages' language, chosen as for the member pages.
	lang string
}

type adminRoute struct {
	get, post func(*adminCtx)
	// always marks the routes that exist while MCP connections is off.
	always bool
}

var adminRoutes = map[string]adminRoute{
	sitepath.Admin:             {get: (*adminCtx).toOverview, always: true},
	sitepath.Admin + "/":       {get: (*adminCtx).toOverview, always: true},
	sitepath.AdminApplications: {get: (*adminCtx).overview, always: true},
	adminPathSwitch:            {post: (*adminCtx).toggle, always: true},
	adminPathNew:               {get: (*adminCtx).newApp, post: (*adminCtx).createApp},
	adminPathEdit:              {get: (*adminCtx).editApp, post: (*adminCtx).updateApp},
	adminPathSecret:            {post: (*adminCtx).regenerateSecret},
	adminPathDelete:            {get: (*adminCtx).confirmDelete, post: (*adminCtx).deleteClient},
	adminPathReview:            {get: (*adminCtx).reviewForm, post: (*adminCtx).review},
	// Vendors' connections exist whatever the switch, so these do too.
	adminPathPeople:     {get: (*adminCtx).people, always: true},
	adminPathDisconnect: {post: (*adminCtx).disconnectPerson, always: true},
	adminPathActivity:   {get: (*adminCtx).activity, always: true},
	adminPathUsage:      {get: (*adminCtx).usage, always: true},
}

// handleAdmin serves everything under sitepath.Admin: the gate admits a
// signed-in operator, then the route's page answers.
func (s *Server) handleAdmin(w http.ResponseWriter, r *http.Request) {
	setPageHeaders(w, "")
	a, ok := s.admitOperator(w, r)
	if !ok {
		return
	}
	route, ok := adminRoutes[r.URL.Path]
	if !ok {
		a.fail(http.StatusNotFound, "admin.error.no_page")
		return
	}
	a.serve(route)
}

// admitOperator is the gate: it lets in a signed-in operator, and for a
// POST only a form of this site issued to them. Anyone else is sent to
// sign in or refused, and it reports false.
func (s *Server) admitOperator(w http.ResponseWriter, r *http.Request) (*adminCtx, bool) {
	post := r.Method == http.MethodPost
	if !post && r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD, POST")
		s.adminError(w, r, http.StatusMethodNotAllowed, "admin.error.get_post_only")
		return nil, false
	}
	// Checked before the session lookup, so a forged request never makes
	// the gateway forward the victim's cookies.
	if post && !sameOriginForm(r, s.cfg.Issuer) {
		s.adminError(w, r, http.StatusForbidden, "error.cross_site")
		return nil, false
	}
	id, err := s.lookupSession(r.Context(), r)
	if err != nil {
		s.cfg.Logger.Error("admin: session lookup failed", "error", err)
		s.adminError(w, r, http.StatusServiceUnavailable, "admin.error.session")
		return nil, false
	}
	if id == nil {
		s.adminLogin(w, r)
		return nil, false
	}
	if !id.IsOperator() {
		s.adminError(w, r, http.StatusForbidden, "admin.error.not_operator")
		return nil, false
	}
	if a := store.AuditOf(r.Context()); a != nil {
		a.Actor, a.ActorSub = store.ActorOperator, id.Subject
	}
	key, err := s.adminCSRFKey(r.Context())
	if err != nil {
		s.unavailablePage(w, r, true, retryAdmin, "admin: loading the CSRF key", err)
		return nil, false
	}
	now := s.cfg.Now()
	a := &adminCtx{s: s, w: w, r: r, id: id, csrf: adminCSRFToken(key, id.Subject, now), lang: s.pageLang(r)}
	if post && !(a.readForm() && a.formIssued(key, now)) {
		return nil, false
	}
	return a, true
}

// serve answers with the route's page for the request's method. While
// MCP connections is off, the area has only the routes marked always.
func (a *adminCtx) serve(route adminRoute) {
	post := a.r.Method == http.MethodPost
	if !route.always {
		on, err := a.s.MCPConnectionsEnabled(a.r.Context())
		if err != nil {
			a.unavailable("reading the MCP connections switch", err)
			return
		}
		if !on {
			a.closed(post)
			return
		}
	}
	h := route.get
	if post {
		h = route.post
	}
	if h == nil {
		allow := "POST"
		if route.get != nil {
			allow = "GET, HEAD"
		}
		a.w.Header().Set("Allow", allow)
		a.fail(http.StatusMethodNotAllowed, "admin.error.method")
		return
	}
	h(a)
}

// closed answers a route that does not exist while MCP connections is off.
func (a *adminCtx) closed(post bool) {
	if post {
		a.fail(http.StatusConflict, "admin.error.turn_on_first")
		return
	}
	a.redirect(sitepath.AdminApplications, nil)
}

// adminLogin sends a browser that is not signed in to the legacy login
// page, as authorize does, returning here afterwards. A form POST cannot
// be replayed after login, so it returns to the overview.
func (s *Server) adminLogin(w http.ResponseWriter, r *http.Request) {
	back := s.url(sitepath.AdminApplications)
	if r.Method != http.MethodPost {
		back = s.url(r.URL.EscapedPath())
		if r.URL.RawQuery != "" {
			back += "?" + r.URL.RawQuery
		}
	}
	login := s.cfg.LoginURL
	if strings.HasPrefix(login, "/") {
		login = s.url(login)
	}
	u, err := url.Parse(login)
	if err != nil || login == "" {
		s.adminError(w, r, http.StatusInternalServerError, "error.login_misconfigured")
		return
	}
	q := u.Query()
	q.Set("return_to", back)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// render writes a page in the operator's language, or the error page if
// the template fails.
func (a *adminCtx) render(status int, p pageSet, v any) {
	page, err := renderPage(p.in(a.lang), v)
	if err != nil {
		a.s.cfg.Logger.Error("admin: rendering a page", "error", err)
		a.fail(http.StatusInternalServerError, "error.not_shown")
		return
	}
	setLanguageHeaders(a.w, a.lang)
	a.w.WriteHeader(status)
	_, _ = a.w.Write(page)
}

// fail answers with the admin area's error page saying the message key
// (with its placeholders' name-value pairs).
func (a *adminCtx) fail(status int, key string, args ...any) {
	a.s.adminError(a.w, a.r, status, key, args...)
}

// failInput answers 400 with why the input was refused, in the
// operator's language where the message has a key, then the suffix key's
// message (such as that nothing was changed), if any.
func (a *adminCtx) failInput(ie *InputError, suffix string) {
	text := ie.In(a.lang)
	if suffix != "" {
		text += " " + a.t(suffix)
	}
	a.s.showError(a.w, a.r, http.StatusBadRequest, errorView{Message: text, Admin: true})
}

// adminError answers with the error page of the admin area.
func (s *Server) adminError(w http.ResponseWriter, r *http.Request, status int, key string, args ...any) {
	s.showError(w, r, status, errorView{Key: key, Args: args, Admin: true})
}

// t is the message key in the operator's language.
func (a *adminCtx) t(key string, args ...any) string { return msg(a.lang, key, args...) }

// unavailable answers a store failure. Each store call is one
// transaction, so the failed one changed nothing and the operator may
// simply try again.
func (a *adminCtx) unavailable(what string, err error) {
	a.s.unavailablePage(a.w, a.r, true, retryAdmin, "admin: "+what, err)
}

// redirect answers a successful POST (or a GET of a moved page) with 303.
func (a *adminCtx) redirect(path string, q url.Values) {
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	http.Redirect(a.w, a.r, path, http.StatusSeeOther)
}
