package authserver

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
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
)

// Limits of the admin forms.
const (
	maxAdminFormBytes  = 32 << 10
	maxAppNameLen      = 200
	maxAppRedirectURIs = 20
	maxAppRedirectLen  = 2048
	maxClientIDLen     = 2048
	maxFormNonceLen    = 64
	// adminCSRFMaxAge bounds how long a rendered form stays valid.
	adminCSRFMaxAge = 12 * time.Hour
	// adminCSRFSkew tolerates clocks of several gateway instances.
	adminCSRFSkew = 5 * time.Minute
)

// settingAdminCSRFKey holds the per-site random key CSRF tokens are
// derived from; it lives in the store so every gateway instance of the
// site accepts the forms any of them rendered.
const settingAdminCSRFKey = "admin_csrf_key"

// memberAppScopeNames are the scopes a client acting for a member may be
// given: identity and the member's own account.
var memberAppScopeNames = []string{"openid", "profile", "email", "account:read", "account:write"}

// memberAppScopes is policy.AllScopes, in the table's order, limited to
// memberAppScopeNames: what an operator may choose for a member
// application or a reviewed metadata-document client.
func memberAppScopes() []string {
	var out []string
	for _, s := range policy.AllScopes {
		if slices.Contains(memberAppScopeNames, s) {
			out = append(out, s)
		}
	}
	return out
}

// adminCtx is one admin request by a signed-in operator.
type adminCtx struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	id   *Identity
	csrf string
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
}

// handleAdmin serves everything under sitepath.Admin.
func (s *Server) handleAdmin(w http.ResponseWriter, r *http.Request) {
	setPageHeaders(w, "")
	post := r.Method == http.MethodPost
	if !post && r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD, POST")
		s.adminError(w, http.StatusMethodNotAllowed, "This page accepts GET and form POST requests only.")
		return
	}
	// Checked before the session lookup, so a forged request never makes
	// the gateway forward the victim's cookies.
	if post && !sameOriginForm(r, s.cfg.Issuer) {
		s.adminError(w, http.StatusForbidden, "The form was submitted from another site.")
		return
	}
	id, err := s.lookupSession(r.Context(), r)
	if err != nil {
		s.cfg.Logger.Error("admin: session lookup failed", "error", err)
		s.adminError(w, http.StatusServiceUnavailable, "The school site could not confirm who is signed in. Please try again shortly.")
		return
	}
	if id == nil {
		s.adminLogin(w, r)
		return
	}
	if !id.IsOperator() {
		s.adminError(w, http.StatusForbidden, "Only the school's operators (owner, admin or operator role) can manage OAuth applications.")
		return
	}
	key, err := s.adminCSRFKey()
	if err != nil {
		s.cfg.Logger.Error("admin: loading the CSRF key", "error", err)
		s.adminError(w, http.StatusInternalServerError, "The admin area is unavailable; please try again.")
		return
	}
	now := s.cfg.Now()
	if post {
		r.Body = http.MaxBytesReader(w, r.Body, maxAdminFormBytes)
		if err := r.ParseForm(); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				s.adminError(w, http.StatusRequestEntityTooLarge, "The form is too large.")
				return
			}
			s.adminError(w, http.StatusBadRequest, "The form could not be read.")
			return
		}
		if !checkAdminCSRF(key, id.Subject, r.PostForm.Get("csrf_token"), now) {
			s.adminError(w, http.StatusForbidden, "The form has expired or was not issued to you. Go back, reload the page and try again.")
			return
		}
	}
	route, ok := adminRoutes[r.URL.Path]
	if !ok {
		s.adminError(w, http.StatusNotFound, "There is no such page in the admin area.")
		return
	}
	a := &adminCtx{s: s, w: w, r: r, id: id, csrf: adminCSRFToken(key, id.Subject, now)}
	if !route.always && !s.MCPConnectionsEnabled() {
		// The area shows only the switch while the beta feature is off.
		if post {
			a.fail(http.StatusConflict, "Turn on MCP connections first.")
			return
		}
		a.redirect(sitepath.AdminApplications, nil)
		return
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
		w.Header().Set("Allow", allow)
		a.fail(http.StatusMethodNotAllowed, "This page does not accept that request method.")
		return
	}
	h(a)
}

// sameOriginForm refuses a form a browser says came from another site.
// "Origin: null" is what browsers send for this area's own forms, whose
// pages carry Referrer-Policy: no-referrer, so it is left to the CSRF
// token; Sec-Fetch-Site, where sent, must be same-origin.
func sameOriginForm(r *http.Request, issuer string) bool {
	if o := r.Header.Get("Origin"); o != "" && o != "null" && !policy.SameOrigin(o, issuer) {
		return false
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
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
		s.adminError(w, http.StatusInternalServerError, "The sign-in page is misconfigured.")
		return
	}
	q := u.Query()
	q.Set("return_to", back)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// adminCSRFKey returns the site's CSRF key, creating it on first use.
func (s *Server) adminCSRFKey() ([]byte, error) {
	v, err := s.store.GetSetting(settingAdminCSRFKey)
	if err == nil && len(v) >= 32 {
		return v, nil
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if err := s.store.PutSetting(settingAdminCSRFKey, []byte(randomString())); err != nil {
		return nil, err
	}
	// Read back: if another instance wrote its key at the same time, the
	// stored one is what both use from now on.
	return s.store.GetSetting(settingAdminCSRFKey)
}

// adminCSRFToken binds a form to the operator (their subject) and to the
// time it was rendered: "<unix time>.<HMAC-SHA256>".
func adminCSRFToken(key []byte, subject string, now time.Time) string {
	ts := strconv.FormatInt(now.Unix(), 10)
	return ts + "." + adminCSRFMAC(key, subject, ts)
}

func adminCSRFMAC(key []byte, subject, ts string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("schoolgate admin form\x00" + subject + "\x00" + ts))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkAdminCSRF verifies a token in constant time.
func checkAdminCSRF(key []byte, subject, token string, now time.Time) bool {
	ts, mac, ok := strings.Cut(token, ".")
	if !ok || len(token) > 128 {
		return false
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	issued := time.Unix(secs, 0)
	if issued.After(now.Add(adminCSRFSkew)) || now.Sub(issued) > adminCSRFMaxAge {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(adminCSRFMAC(key, subject, ts)))
}

// page is what every admin page shows.
func (a *adminCtx) page(title string) adminPage {
	return adminPage{Title: title, Person: personLabel(a.id), CSRF: a.csrf}
}

// render writes a page, or a plain error page if the template fails (so
// a half-written page never reaches the browser).
func (a *adminCtx) render(status int, t *template.Template, v any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, v); err != nil {
		a.s.cfg.Logger.Error("admin: rendering a page", "error", err)
		a.s.adminError(a.w, http.StatusInternalServerError, "The page could not be shown.")
		return
	}
	a.w.WriteHeader(status)
	_, _ = a.w.Write(buf.Bytes())
}

func (a *adminCtx) fail(status int, msg string) { a.s.adminError(a.w, status, msg) }

func (a *adminCtx) internal(what string, err error) {
	a.s.cfg.Logger.Error("admin: "+what, "error", err)
	a.fail(http.StatusInternalServerError, "Something went wrong while "+what+"; nothing more was changed. Please try again.")
}

// redirect answers a successful POST (or a GET of a moved page) with 303.
func (a *adminCtx) redirect(path string, q url.Values) {
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	http.Redirect(a.w, a.r, path, http.StatusSeeOther)
}

// adminNotices are the fixed messages a redirect may ask for; nothing of
// the query string is echoed.
var adminNotices = map[string]string{
	"on":       "MCP connections is on. Member applications can now be created and authorized.",
	"off":      "MCP connections is off. Member applications you created are kept, but cannot authorize until it is switched on again.",
	"saved":    "The application was saved.",
	"deleted":  "The client was deleted and the access it had been granted was revoked.",
	"reviewed": "The metadata-document client was updated.",
	"resubmit": "This form had already been submitted, so no second application was created. Its secret was shown only once: if it was not copied, regenerate it below.",
}

func (a *adminCtx) notice() string { return adminNotices[a.r.URL.Query().Get("done")] }

func (a *adminCtx) toOverview() { a.redirect(sitepath.AdminApplications, nil) }

// overview lists everything; with MCP connections off, only the switch.
func (a *adminCtx) overview() {
	v := adminOverview{adminPage: a.page("OAuth applications"), Enabled: a.s.MCPConnectionsEnabled()}
	v.Notice = a.notice()
	if v.Enabled {
		clients, err := a.s.ListClients()
		if err != nil {
			a.internal("listing the clients", err)
			return
		}
		for _, c := range clients {
			switch c.Kind {
			case KindApp:
				v.Apps = append(v.Apps, c)
			case KindMetadata:
				v.Metadata = append(v.Metadata, c)
			case KindLoopback:
				v.Loopback = append(v.Loopback, c)
			}
		}
	}
	a.render(http.StatusOK, overviewTmpl, v)
}

func formatAdminTime(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// toggle switches MCP connections. The form names the wanted state, so a
// repeated submission changes nothing.
func (a *adminCtx) toggle() {
	var on bool
	switch a.r.PostForm.Get("enabled") {
	case "on":
		on = true
	case "off":
	default:
		a.fail(http.StatusBadRequest, "The form did not say whether to turn MCP connections on or off.")
		return
	}
	if err := a.s.SetMCPConnections(on); err != nil {
		a.internal("saving the MCP connections switch", err)
		return
	}
	a.s.cfg.Logger.Info("admin: MCP connections switched", "on", on, "by", a.id.Subject)
	done := "off"
	if on {
		done = "on"
	}
	a.redirect(sitepath.AdminApplications, url.Values{"done": {done}})
}

// parseAppForm reads the application form into a spec and validates it;
// the message is shown to the operator above the form.
func parseAppForm(form url.Values, withType bool) (AppSpec, string) {
	spec := AppSpec{Name: form.Get("name"), Scopes: form["scope"]}
	for line := range strings.Lines(form.Get("redirect_uris")) {
		spec.RedirectURIs = append(spec.RedirectURIs, line)
	}
	if msg := spec.normalize(); msg != "" {
		return spec, msg
	}
	if withType {
		switch form.Get("client_type") {
		case "public":
		case "confidential":
			spec.Confidential = true
		default:
			return spec, "Choose whether the application is public or confidential."
		}
	}
	return spec, ""
}

// checkAppRedirect accepts an absolute https URL, or an http URL on a
// loopback address (RFC 8252 §7.3), without fragment or credentials.
func checkAppRedirect(raw string) string {
	if len(raw) > maxAppRedirectLen {
		return fmt.Sprintf("A redirect URI must be at most %d characters long.", maxAppRedirectLen)
	}
	if strings.IndexFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 ||
		!utf8.ValidString(raw) {
		return fmt.Sprintf("Redirect URI %q must not contain spaces or control characters.", raw)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return fmt.Sprintf("Redirect URI %q is not an absolute URL such as https://app.example/callback.", raw)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Sprintf("Redirect URI %q must not have a fragment (#...).", raw)
	case u.User != nil:
		return fmt.Sprintf("Redirect URI %q must not contain a user name or password.", raw)
	case u.Scheme == "https":
		return ""
	case isLoopbackRedirect(u):
		return ""
	}
	return fmt.Sprintf("Redirect URI %q must use https; plain http is allowed only on a loopback address such as http://127.0.0.1:8080/callback.", raw)
}

// parseMemberScopes checks chosen scopes against memberAppScopes and
// returns them in the scope table's order.
func parseMemberScopes(chosen []string) ([]string, string) {
	allowed := memberAppScopes()
	for _, sc := range chosen {
		if !slices.Contains(allowed, sc) {
			if len(sc) > 64 {
				sc = sc[:64] + "…"
			}
			return nil, fmt.Sprintf("Scope %q cannot be given to a member application; choose among %s.",
				sc, strings.Join(allowed, ", "))
		}
	}
	var out []string
	for _, sc := range allowed {
		if slices.Contains(chosen, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, "Choose at least one scope."
	}
	return out, ""
}

// appFormView fills the application form.
func (a *adminCtx) appFormView(title string, c *Client, in AppSpec, msg string) adminAppForm {
	v := adminAppForm{adminPage: a.page(title), Name: in.Name,
		RedirectURIs: strings.Join(in.RedirectURIs, "\n"), Confidential: in.Confidential,
		Scopes: scopeChoices(in.Scopes)}
	v.Error = msg
	if c != nil {
		v.ClientID, v.Confidential = c.ID, !c.Public()
	}
	return v
}

func scopeChoices(checked []string) []scopeChoice {
	var out []scopeChoice
	for i, sc := range memberAppScopes() {
		out = append(out, scopeChoice{ID: "scope-" + strconv.Itoa(i), Name: sc,
			Words: policy.ScopeDescription(sc), Checked: slices.Contains(checked, sc)})
	}
	return out
}

// newApp shows the creation form. Its form nonce lets a resubmission of
// the same form be recognised instead of creating a second application.
func (a *adminCtx) newApp() {
	v := a.appFormView("Create a member application", nil, AppSpec{}, "")
	v.FormNonce = randomString()
	a.render(http.StatusOK, appFormTmpl, v)
}

// createApp creates a member application; a resubmitted form (same
// nonce) leads to the application it created, without its secret.
func (a *adminCtx) createApp() {
	form := a.r.PostForm
	spec, msg := parseAppForm(form, true)
	nonce := form.Get("form_nonce")
	if msg == "" && (nonce == "" || len(nonce) > maxFormNonceLen) {
		msg = "The form is incomplete. Reload the page and try again."
	}
	if msg != "" {
		a.refuseAppForm("Create a member application", nil, nonce, msg)
		return
	}
	app, err := a.s.CreateApp(spec, nonce)
	if err != nil {
		a.internal("creating the application", err)
		return
	}
	if app.Existing {
		a.redirect(adminPathEdit, url.Values{"client_id": {app.ClientID}, "done": {"resubmit"}})
		return
	}
	a.s.cfg.Logger.Info("admin: member application created", "client_id", app.ClientID, "by", a.id.Subject)
	a.showSecret("Application created", app.ClientInfo, app.ClientSecret, true)
}

// refuseAppForm shows the form again with what the operator typed and
// why it was refused.
func (a *adminCtx) refuseAppForm(title string, c *Client, nonce, msg string) {
	form := a.r.PostForm
	in := AppSpec{Name: form.Get("name"), Scopes: form["scope"],
		RedirectURIs: []string{strings.TrimSpace(form.Get("redirect_uris"))},
		Confidential: form.Get("client_type") == "confidential"}
	v := a.appFormView(title, c, in, msg)
	if c == nil {
		v.FormNonce = nonce
		if nonce == "" || len(nonce) > maxFormNonceLen {
			v.FormNonce = randomString()
		}
	}
	a.render(http.StatusBadRequest, appFormTmpl, v)
}

// showSecret answers the creating (or regenerating) POST directly with
// 200, the one exception to post/redirect/get: the secret then exists
// only in this response, never in a URL, a log or the store (which keeps
// its hash alone), and it works the same across gateway instances. The
// page is no-store; a resubmitted creation form is recognised by its
// nonce and does not create or reveal anything again.
func (a *adminCtx) showSecret(title string, c ClientInfo, secret string, created bool) {
	v := adminSecretView{adminPage: a.page(title), ClientID: c.ClientID, Name: c.Name,
		Secret: secret, AuthMethod: c.AuthMethod, Created: created, Scopes: c.Scopes,
		RedirectURIs: c.RedirectURIs, Issuer: a.s.cfg.Issuer}
	a.render(http.StatusOK, secretTmpl, v)
}

// loadClient finds a stored client of one of the kinds, answering 404
// itself when there is none.
func (a *adminCtx) loadClient(kinds ...string) (*Client, bool) {
	c, err := a.s.clientOfKind(a.target(), kinds...)
	if err != nil {
		a.clientFailure("loading the client", err)
		return nil, false
	}
	return c, true
}

// clientFailure answers an error of the client operations: 404 for a
// missing client (or one of a kind the page does not handle), 400 for a
// refused input, 500 for the store.
func (a *adminCtx) clientFailure(what string, err error) {
	var ie *InputError
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrWrongKind):
		a.fail(http.StatusNotFound, "There is no such client.")
	case errors.As(err, &ie):
		a.fail(http.StatusBadRequest, ie.Msg)
	default:
		a.internal(what, err)
	}
}

func (a *adminCtx) target() string {
	if a.r.Method == http.MethodPost {
		return a.r.PostForm.Get("client_id")
	}
	return a.r.URL.Query().Get("client_id")
}

func (a *adminCtx) editApp() {
	c, ok := a.loadClient(KindApp)
	if !ok {
		return
	}
	v := a.appFormView("Edit "+displayName(c), c,
		AppSpec{Name: c.Name, RedirectURIs: c.RedirectURIs, Scopes: c.Scopes}, "")
	v.Notice = a.notice()
	a.render(http.StatusOK, appFormTmpl, v)
}

func (a *adminCtx) updateApp() {
	c, ok := a.loadClient(KindApp)
	if !ok {
		return
	}
	spec, msg := parseAppForm(a.r.PostForm, false)
	if msg != "" {
		a.refuseAppForm("Edit "+displayName(c), c, "", msg)
		return
	}
	if _, err := a.s.UpdateApp(c.ID, spec); err != nil {
		a.clientFailure("saving the application", err)
		return
	}
	a.s.cfg.Logger.Info("admin: member application updated", "client_id", c.ID, "by", a.id.Subject)
	a.redirect(sitepath.AdminApplications, url.Values{"done": {"saved"}})
}

// regenerateSecret replaces a confidential application's secret; the old
// one stops working at once (tokens already issued stay valid, but no
// refresh succeeds with the old secret).
func (a *adminCtx) regenerateSecret() {
	info, secret, err := a.s.RegenerateSecret(a.target())
	if err != nil {
		a.clientFailure("saving the new secret", err)
		return
	}
	a.s.cfg.Logger.Info("admin: client secret regenerated", "client_id", info.ClientID, "by", a.id.Subject)
	a.showSecret("New secret for "+info.Name, info, secret, false)
}

func (a *adminCtx) confirmDelete() {
	c, ok := a.loadClient(KindApp, KindLoopback)
	if !ok {
		return
	}
	a.render(http.StatusOK, deleteTmpl, adminDeleteView{adminPage: a.page("Delete " + displayName(c)),
		Client: clientInfo(c), Loopback: c.Kind == KindLoopback})
}

// deleteClient deletes a member application or a loopback client and
// revokes its grants, so its tokens stop working at once.
func (a *adminCtx) deleteClient() {
	id := a.target()
	if _, err := a.s.DeleteClient(id); err != nil {
		a.clientFailure("deleting the client", err)
		return
	}
	a.s.cfg.Logger.Info("admin: client deleted", "client_id", id, "by", a.id.Subject)
	a.redirect(sitepath.AdminApplications, url.Values{"done": {"deleted"}})
}

func (a *adminCtx) reviewView(c *Client, scopes []string, reviewed bool, msg string) adminReviewView {
	v := adminReviewView{adminPage: a.page("Review " + displayName(c)), Client: clientInfo(c),
		Scopes: scopeChoices(scopes), Reviewed: reviewed}
	v.Error = msg
	return v
}

func (a *adminCtx) reviewForm() {
	c, ok := a.loadClient(KindMetadata)
	if !ok {
		return
	}
	a.render(http.StatusOK, reviewTmpl, a.reviewView(c, c.Scopes, c.Reviewed, ""))
}

// review records the operator's decision on a metadata-document client.
func (a *adminCtx) review() {
	c, ok := a.loadClient(KindMetadata)
	if !ok {
		return
	}
	form := a.r.PostForm
	var reviewed bool
	var msg string
	switch form.Get("status") {
	case "reviewed":
		reviewed = true
	case "unreviewed":
	default:
		msg = "Choose whether the client is reviewed."
	}
	if msg == "" {
		_, err := a.s.ReviewClient(c.ID, form["scope"], reviewed)
		var ie *InputError
		if !errors.As(err, &ie) {
			if err != nil {
				a.clientFailure("saving the review", err)
				return
			}
			a.s.cfg.Logger.Info("admin: metadata-document client reviewed", "client_id", c.ID, "by", a.id.Subject)
			a.redirect(sitepath.AdminApplications, url.Values{"done": {"reviewed"}})
			return
		}
		msg = ie.Msg
	}
	a.render(http.StatusBadRequest, reviewTmpl, a.reviewView(c, form["scope"], reviewed, msg))
}
