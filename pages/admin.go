package pages

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/policy"
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
	// The connection doctor of one application.
	adminPathDoctor = sitepath.AdminApplications + "/doctor"
	// The school's usage.
	adminPathUsage = sitepath.Admin + "/usage"
)

// adminCtx is one admin request by a signed-in operator.
type adminCtx struct {
	p    *Pages
	as   *authserver.Server
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
	adminPathDoctor:     {get: (*adminCtx).doctor, always: true},
	adminPathUsage:      {get: (*adminCtx).usage, always: true},
}

// Admin serves everything under sitepath.Admin: the gate admits a
// signed-in operator, then the route's page answers.
func (p *Pages) Admin(w http.ResponseWriter, r *http.Request) {
	setPageHeaders(w, "")
	a, ok := p.admitOperator(w, r)
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
func (p *Pages) admitOperator(w http.ResponseWriter, r *http.Request) (*adminCtx, bool) {
	post := r.Method == http.MethodPost
	if !post && r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD, POST")
		p.adminError(w, r, http.StatusMethodNotAllowed, "admin.error.get_post_only")
		return nil, false
	}
	// Checked before the session lookup, so a forged request never makes
	// the gateway forward the victim's cookies.
	if post && !sameOriginForm(r, p.as.Issuer()) {
		p.adminError(w, r, http.StatusForbidden, "error.cross_site")
		return nil, false
	}
	id, err := p.as.Session(r.Context(), r)
	if err != nil {
		p.cfg.Logger.Error("admin: session lookup failed", "error", err)
		p.adminError(w, r, http.StatusServiceUnavailable, "admin.error.session")
		return nil, false
	}
	if id == nil {
		p.adminLogin(w, r)
		return nil, false
	}
	if !id.IsOperator() {
		p.adminError(w, r, http.StatusForbidden, "admin.error.not_operator")
		return nil, false
	}
	if a := store.AuditOf(r.Context()); a != nil {
		a.Actor, a.ActorSub = store.ActorOperator, id.Subject
	}
	key, err := p.as.FormKey(r.Context())
	if err != nil {
		p.unavailableAdmin(w, r, "admin: loading the CSRF key", err)
		return nil, false
	}
	now := p.cfg.Now()
	a := &adminCtx{p: p, as: p.as, w: w, r: r, id: id, csrf: adminCSRFToken(key, id.Subject, now), lang: p.pageLang(r)}
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
		on, err := a.as.MCPConnectionsEnabled(a.r.Context())
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
func (p *Pages) adminLogin(w http.ResponseWriter, r *http.Request) {
	back := p.as.Issuer() + sitepath.AdminApplications
	if r.Method != http.MethodPost {
		back = p.as.Issuer() + r.URL.EscapedPath()
		if r.URL.RawQuery != "" {
			back += "?" + r.URL.RawQuery
		}
	}
	login := p.as.LoginPage()
	u, err := url.Parse(login)
	if err != nil || login == "" {
		p.adminError(w, r, http.StatusInternalServerError, "error.login_misconfigured")
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
		a.p.cfg.Logger.Error("admin: rendering a page", "error", err)
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
	a.p.adminError(a.w, a.r, status, key, args...)
}

// failInput answers 400 with why the input was refused, in the
// operator's language where the message has a key, then the suffix key's
// message (such as that nothing was changed), if any.
func (a *adminCtx) failInput(ie *authserver.InputError, suffix string) {
	text := ie.In(a.lang)
	if suffix != "" {
		text += " " + a.t(suffix)
	}
	a.p.showError(a.w, a.r, http.StatusBadRequest, errorView{Message: text, Admin: true})
}

// adminError answers with the error page of the admin area.
func (p *Pages) adminError(w http.ResponseWriter, r *http.Request, status int, key string, args ...any) {
	p.showError(w, r, status, errorView{Key: key, Args: args, Admin: true})
}

// t is the message key in the operator's language.
func (a *adminCtx) t(key string, args ...any) string { return msg(a.lang, key, args...) }

// unavailable answers a store failure. Each store call is one
// transaction, so the failed one changed nothing and the operator may
// simply try again.
func (a *adminCtx) unavailable(what string, err error) {
	a.p.unavailableAdmin(a.w, a.r, "admin: "+what, err)
}

// unavailableAdmin answers a store failure in the admin area: 503 with
// Retry-After; the store's error goes to the log only.
func (p *Pages) unavailableAdmin(w http.ResponseWriter, r *http.Request, what string, err error) {
	p.cfg.Logger.Error("store failed: "+what, "error", err)
	w.Header().Set("Retry-After", strconv.Itoa(policy.RetryAfterUnavailable))
	p.showError(w, r, http.StatusServiceUnavailable, errorView{Key: retryAdmin, Admin: true, Unavailable: true})
}

// redirect answers a successful POST (or a GET of a moved page) with 303.
func (a *adminCtx) redirect(path string, q url.Values) {
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	http.Redirect(a.w, a.r, path, http.StatusSeeOther)
}
