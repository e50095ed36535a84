package pages

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// The person's own area: the applications they connected, one row each
// however many times they allowed it, each with a Disconnect button that
// ends all of it. Whoever the legacy site says is signed in sees their
// own grants at this school and nobody else's. The button leads to a
// confirmation that names the application and what it loses, and only the
// confirmation's submit (confirm=yes) ends anything; both are form POSTs
// checked like the admin area's (the browser's word on where it came
// from, then a token bound to the person and the time the page was
// rendered), so no JavaScript is needed.
const accountPathDisconnect = sitepath.AccountApplications + "/disconnect"

// accountNotices are the fixed messages (keys) a redirect may ask for;
// nothing of the query string is echoed.
var accountNotices = map[string]string{
	"disconnected": "apps.notice_disconnected",
	"already":      "apps.notice_already",
}

type accountView struct {
	School, Person, CSRF string
	// Notice is the key of a message, "" for none.
	Notice string
	// Now is when the page is rendered, which times are relative to.
	Now time.Time
	// Apps are the person's connections, one per application.
	Apps []accountApp
	// Next is the link to the following page, empty on the last one.
	Next string
	// More: this is not the first page.
	More bool
	// Stopped are the applications that tried to connect for the person
	// lately and stopped (doctor.go).
	Stopped []memberAttempt
}

// accountApp is one application on the person's page, with its recent
// activity for them.
type accountApp struct {
	authserver.ConnectionInfo
	// From is the address of the latest event that has one; Activity
	// the latest few events, newest first. Both empty when none is kept.
	From     string
	Activity []activityEvent
}

// Paths lets the template name the area's routes.
func (accountView) Paths() accountPaths { return theAccountPaths }

type accountPaths struct{ Applications, Disconnect string }

var theAccountPaths = accountPaths{Applications: sitepath.AccountApplications, Disconnect: accountPathDisconnect}

// Account serves the person's area.
func (p *Pages) Account(w http.ResponseWriter, r *http.Request) {
	setPageHeaders(w, "")
	switch r.URL.Path {
	case sitepath.AccountApplications:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			p.accountError(w, r, http.StatusMethodNotAllowed, "error.view_only")
			return
		}
		p.applicationsPage(w, r)
	case accountPathDisconnect:
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			p.accountError(w, r, http.StatusMethodNotAllowed, "error.use_disconnect")
			return
		}
		p.disconnect(w, r)
	default:
		p.accountError(w, r, http.StatusNotFound, "error.no_page")
	}
}

// accountPerson is who the legacy site says is signed in; when nobody
// is, or the site cannot say, the answer has been sent and it is nil.
func (p *Pages) accountPerson(w http.ResponseWriter, r *http.Request) *store.Identity {
	id, err := p.as.Session(r.Context(), r)
	if err != nil {
		p.cfg.Logger.Error("account: session lookup failed", "error", err)
		w.Header().Set("Retry-After", strconv.Itoa(policy.RetryAfterUnavailable))
		p.accountError(w, r, http.StatusServiceUnavailable, "error.session_unavailable")
		return nil
	}
	if id == nil {
		p.accountLogin(w, r)
	}
	return id
}

// accountLogin sends the browser to the legacy login page, which returns
// it to the applications page: a form POST cannot be replayed after login.
func (p *Pages) accountLogin(w http.ResponseWriter, r *http.Request) {
	back := p.as.Issuer() + sitepath.AccountApplications
	login := p.as.LoginPage()
	u, err := url.Parse(login)
	if err != nil || login == "" {
		p.accountError(w, r, http.StatusInternalServerError, "error.login_misconfigured")
		return
	}
	q := u.Query()
	q.Set("return_to", back)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// accountPersonKey finds the signed-in person and the key of their
// forms' tokens; nil when it has answered instead (sign-in redirect, 503).
func (p *Pages) accountPersonKey(w http.ResponseWriter, r *http.Request) (*store.Identity, []byte) {
	id := p.accountPerson(w, r)
	if id == nil {
		return nil, nil
	}
	key, err := p.as.FormKey(r.Context())
	if err != nil {
		p.unavailableAccount(w, r, "account: loading the CSRF key", err)
		return nil, nil
	}
	return id, key
}

// applicationsPage lists the person's applications, a page at a time.
func (p *Pages) applicationsPage(w http.ResponseWriter, r *http.Request) {
	id, key := p.accountPersonKey(w, r)
	if id == nil {
		return
	}
	q := r.URL.Query()
	cursor := q.Get("after")
	page, err := p.as.ListConnections(r.Context(), authserver.GrantFilter{Subject: id.Subject, Cursor: cursor})
	var ie *authserver.InputError
	switch {
	case errors.As(err, &ie):
		p.accountError(w, r, http.StatusBadRequest, "error.bad_page_link")
		return
	case err != nil:
		p.unavailableAccount(w, r, "account: listing the applications", err)
		return
	}
	v := accountView{School: p.schoolName(), Person: authserver.PersonLabel(id), Notice: accountNotices[q.Get("done")],
		CSRF: accountCSRFToken(key, id.Subject, p.cfg.Now()), More: cursor != "", Now: p.cfg.Now()}
	for _, c := range page.Connections {
		// Grants that act as a school operator belong to the admin side
		// of a person who is one; anyone else never sees them listed.
		if c.OperatorOnly() && !id.IsOperator() {
			continue
		}
		v.Apps = append(v.Apps, accountApp{ConnectionInfo: c})
	}
	if page.Next != "" {
		v.Next = sitepath.AccountApplications + "?" + url.Values{"after": {page.Next}}.Encode()
	}
	lang := p.pageLang(r)
	p.addActivity(r.Context(), lang, id.Subject, v.Apps)
	if cursor == "" {
		v.Stopped = p.stoppedAttempts(r.Context(), lang, id.Subject)
	}
	setLanguageHeaders(w, lang)
	body, err := renderPage(accountTmpl.in(lang), v)
	if err != nil {
		p.cfg.Logger.Error("account: rendering the applications page", "error", err)
		p.accountError(w, r, http.StatusInternalServerError, "error.not_shown")
		return
	}
	_, _ = w.Write(body)
}

// disconnect ends the signed-in person's whole connection to the
// application the form names: every grant, on every device.
func (p *Pages) disconnect(w http.ResponseWriter, r *http.Request) {
	// Checked before the session lookup, so a forged request never makes
	// the gateway forward the victim's cookies.
	if !sameOriginForm(r, p.as.Issuer()) {
		p.accountError(w, r, http.StatusForbidden, "error.cross_site_unchanged")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		p.accountError(w, r, http.StatusBadRequest, "error.form_unreadable_unchanged")
		return
	}
	id, key := p.accountPersonKey(w, r)
	if id == nil {
		return
	}
	if !checkAccountCSRF(key, id.Subject, r.PostForm.Get("csrf_token"), p.cfg.Now()) {
		p.accountError(w, r, http.StatusForbidden, "error.form_expired")
		return
	}
	clientID := r.PostForm.Get("client_id")
	if r.PostForm.Get("confirm") != "yes" {
		// The list's button only asks: the confirmation's own submit is
		// the one that ends anything.
		p.confirmDisconnect(w, r, id, key, clientID)
		return
	}
	_, err := p.as.DisconnectClient(r.Context(), clientID, id.Subject, authserver.DisconnectedByMember)
	done := "disconnected"
	switch {
	case errors.Is(err, authserver.ErrAlreadyDisconnected):
		done = "already"
	case errors.Is(err, store.ErrNotFound):
		p.accountError(w, r, http.StatusNotFound, "error.no_such_app")
		return
	case err != nil:
		p.unavailableAccount(w, r, "account: disconnecting an application", err)
		return
	}
	http.Redirect(w, r, sitepath.AccountApplications+"?done="+done, http.StatusSeeOther)
}

// confirmView is the confirmation a Disconnect button leads to: it names
// the application and what it loses, and its submit is the disconnect.
type confirmView struct {
	School, Person, CSRF string
	App                  authserver.ConnectionInfo
}

// Paths lets the template name the area's routes.
func (confirmView) Paths() accountPaths { return theAccountPaths }

// confirmDisconnect shows the confirmation of a disconnect; it changes
// nothing. Only an application the person's own list shows is named: any
// other gets the page that says nothing was changed, as its disconnect
// would, rather than a confirmation naming an application the person
// never connected.
func (p *Pages) confirmDisconnect(w http.ResponseWriter, r *http.Request, id *store.Identity, key []byte, clientID string) {
	c, err := p.personConnection(r.Context(), id.Subject, clientID)
	switch {
	case err != nil:
		p.unavailableAccount(w, r, "account: naming the application to disconnect", err)
		return
	case c == nil || (c.OperatorOnly() && !id.IsOperator()):
		p.accountError(w, r, http.StatusNotFound, "error.no_such_app")
		return
	}
	v := confirmView{School: p.schoolName(), Person: authserver.PersonLabel(id), App: *c,
		CSRF: accountCSRFToken(key, id.Subject, p.cfg.Now())}
	lang := p.pageLang(r)
	setLanguageHeaders(w, lang)
	body, err := renderPage(confirmTmpl.in(lang), v)
	if err != nil {
		p.cfg.Logger.Error("account: rendering the confirmation", "error", err)
		p.accountError(w, r, http.StatusInternalServerError, "error.not_shown")
		return
	}
	_, _ = w.Write(body)
}

// personConnection is subject's connection to clientID, nil when the
// person holds no live grant of it. A person's applications are few, so
// their list is read until it is found.
func (p *Pages) personConnection(ctx context.Context, subject, clientID string) (*authserver.ConnectionInfo, error) {
	if clientID == "" || len(clientID) > authserver.MaxClientIDLen {
		return nil, nil
	}
	f := authserver.GrantFilter{Subject: subject, Limit: store.MaxGrantPage}
	for {
		page, err := p.as.ListConnections(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, c := range page.Connections {
			if c.ClientID == clientID {
				return &c, nil
			}
		}
		if page.Next == "" {
			return nil, nil
		}
		f.Cursor = page.Next
	}
}

// accountError answers with the error page of the person's area.
func (p *Pages) accountError(w http.ResponseWriter, r *http.Request, status int, key string) {
	p.showError(w, r, status, errorView{Key: key, Account: true})
}

// unavailableAccount answers a store failure: each store call is one
// transaction, so the failed one changed nothing.
func (p *Pages) unavailableAccount(w http.ResponseWriter, r *http.Request, what string, err error) {
	p.cfg.Logger.Error("store failed: "+what, "error", err)
	w.Header().Set("Retry-After", strconv.Itoa(policy.RetryAfterUnavailable))
	p.showError(w, r, http.StatusServiceUnavailable, errorView{Account: true, Unavailable: true,
		Key: "error.account_unavailable"})
}

// The person's forms carry a token like the admin area's, with its own
// purpose, so that neither form's token passes for the other's.
func accountCSRFToken(key []byte, subject string, now time.Time) string {
	return formToken(key, purposeAccount, subject, now)
}

// checkAccountCSRF verifies an account form's token in constant time.
func checkAccountCSRF(key []byte, subject, token string, now time.Time) bool {
	return checkFormToken(key, purposeAccount, subject, token, now)
}
