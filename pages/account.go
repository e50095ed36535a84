package authserver

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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
}

// accountApp is one application on the person's page, with its recent
// activity for them.
type accountApp struct {
	ConnectionInfo
	// From is the address of the latest event that has one; Activity
	// the latest few events, newest first. Both empty when none is kept.
	From     string
	Activity []activityEvent
}

// Paths lets the template name the area's routes.
func (accountView) Paths() accountPaths { return theAccountPaths }

type accountPaths struct{ Applications, Disconnect string }

var theAccountPaths = accountPaths{Applications: sitepath.AccountApplications, Disconnect: accountPathDisconnect}

// handleAccount serves the person's area.
func (s *Server) handleAccount(w http.ResponseWriter, r *http.Request) {
	setPageHeaders(w, "")
	switch r.URL.Path {
	case sitepath.AccountApplications:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			s.accountError(w, r, http.StatusMethodNotAllowed, "error.view_only")
			return
		}
		s.applicationsPage(w, r)
	case accountPathDisconnect:
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			s.accountError(w, r, http.StatusMethodNotAllowed, "error.use_disconnect")
			return
		}
		s.disconnect(w, r)
	default:
		s.accountError(w, r, http.StatusNotFound, "error.no_page")
	}
}

// accountPerson is who the legacy site says is signed in; when nobody
// is, or the site cannot say, the answer has been sent and it is nil.
func (s *Server) accountPerson(w http.ResponseWriter, r *http.Request) *store.Identity {
	id, err := s.lookupSession(r.Context(), r)
	if err != nil {
		s.cfg.Logger.Error("account: session lookup failed", "error", err)
		w.Header().Set("Retry-After", strconv.Itoa(policy.RetryAfterUnavailable))
		s.accountError(w, r, http.StatusServiceUnavailable, "error.session_unavailable")
		return nil
	}
	if id == nil {
		s.accountLogin(w, r)
	}
	return id
}

// accountLogin sends the browser to the legacy login page, which returns
// it to the applications page: a form POST cannot be replayed after login.
func (s *Server) accountLogin(w http.ResponseWriter, r *http.Request) {
	back := s.url(sitepath.AccountApplications)
	login := s.cfg.LoginURL
	if strings.HasPrefix(login, "/") {
		login = s.url(login)
	}
	u, err := url.Parse(login)
	if err != nil || login == "" {
		s.accountError(w, r, http.StatusInternalServerError, "error.login_misconfigured")
		return
	}
	q := u.Query()
	q.Set("return_to", back)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// accountPersonKey finds the signed-in person and the key of their
// forms' tokens; nil when it has answered instead (sign-in redirect, 503).
func (s *Server) accountPersonKey(w http.ResponseWriter, r *http.Request) (*store.Identity, []byte) {
	id := s.accountPerson(w, r)
	if id == nil {
		return nil, nil
	}
	key, err := s.adminCSRFKey(r.Context())
	if err != nil {
		s.unavailableAccount(w, r, "account: loading the CSRF key", err)
		return nil, nil
	}
	return id, key
}

// applicationsPage lists the person's applications, a page at a time.
func (s *Server) applicationsPage(w http.ResponseWriter, r *http.Request) {
	id, key := s.accountPersonKey(w, r)
	if id == nil {
		return
	}
	q := r.URL.Query()
	cursor := q.Get("after")
	page, err := s.ListConnections(r.Context(), GrantFilter{Subject: id.Subject, Cursor: cursor})
	var ie *InputError
	switch {
	case errors.As(err, &ie):
		s.accountError(w, r, http.StatusBadRequest, "error.bad_page_link")
		return
	case err != nil:
		s.unavailableAccount(w, r, "account: listing the applications", err)
		return
	}
	v := accountView{School: s.schoolName(), Person: personLabel(id), Notice: accountNotices[q.Get("done")],
		CSRF: accountCSRFToken(key, id.Subject, s.cfg.Now()), More: cursor != "", Now: s.cfg.Now()}
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
	lang := s.pageLang(r)
	s.addActivity(r.Context(), lang, id.Subject, v.Apps)
	setLanguageHeaders(w, lang)
	body, err := renderPage(accountTmpl.in(lang), v)
	if err != nil {
		s.cfg.Logger.Error("account: rendering the applications page", "error", err)
		s.accountError(w, r, http.StatusInternalServerError, "error.not_shown")
		return
	}
	_, _ = w.Write(body)
}

// disconnect ends the signed-in person's whole connection to the
// application the form names: every grant, on every device.
func (s *Server) disconnect(w http.ResponseWriter, r *http.Request) {
	// Checked before the session lookup, so a forged request never makes
	// the gateway forward the victim's cookies.
	if !sameOriginForm(r, s.cfg.Issuer) {
		s.accountError(w, r, http.StatusForbidden, "error.cross_site_unchanged")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.accountError(w, r, http.StatusBadRequest, "error.form_unreadable_unchanged")
		return
	}
	id, key := s.accountPersonKey(w, r)
	if id == nil {
		return
	}
	if !checkAccountCSRF(key, id.Subject, r.PostForm.Get("csrf_token"), s.cfg.Now()) {
		s.accountError(w, r, http.StatusForbidden, "error.form_expired")
		return
	}
	clientID := r.PostForm.Get("client_id")
	if r.PostForm.Get("confirm") != "yes" {
		// The list's button only asks: the confirmation's own submit is
		// the one that ends anything.
		s.confirmDisconnect(w, r, id, key, clientID)
		return
	}
	_, err := s.DisconnectClient(r.Context(), clientID, id.Subject, DisconnectedByMember)
	done := "disconnected"
	switch {
	case errors.Is(err, ErrAlreadyDisconnected):
		done = "already"
	case errors.Is(err, store.ErrNotFound):
		s.accountError(w, r, http.StatusNotFound, "error.no_such_app")
		return
	case err != nil:
		s.unavailableAccount(w, r, "account: disconnecting an application", err)
		return
	}
	http.Redirect(w, r, sitepath.AccountApplications+"?done="+done, http.StatusSeeOther)
}

// confirmView is the confirmation a Disconnect button leads to: it names
// the application and what it loses, and its submit is the disconnect.
type confirmView struct {
	School, Person, CSRF string
	App                  ConnectionInfo
}

// Paths lets the template name the area's routes.
func (confirmView) Paths() accountPaths { return theAccountPaths }

// confirmDisconnect shows the confirmation of a disconnect; it changes
// nothing. Only an application the person's own list shows is named: any
// other gets the page that says nothing was changed, as its disconnect
// would, rather than a confirmation naming an application the person
// never connected.
func (s *Server) confirmDisconnect(w http.ResponseWriter, r *http.Request, id *store.Identity, key []byte, clientID string) {
	c, err := s.personConnection(r.Context(), id.Subject, clientID)
	switch {
	case err != nil:
		s.unavailableAccount(w, r, "account: naming the application to disconnect", err)
		return
	case c == nil || (c.OperatorOnly() && !id.IsOperator()):
		s.accountError(w, r, http.StatusNotFound, "error.no_such_app")
		return
	}
	v := confirmView{School: s.schoolName(), Person: personLabel(id), App: *c,
		CSRF: accountCSRFToken(key, id.Subject, s.cfg.Now())}
	lang := s.pageLang(r)
	setLanguageHeaders(w, lang)
	body, err := renderPage(confirmTmpl.in(lang), v)
	if err != nil {
		s.cfg.Logger.Error("account: rendering the confirmation", "error", err)
		s.accountError(w, r, http.StatusInternalServerError, "error.not_shown")
		return
	}
	_, _ = w.Write(body)
}

// accountError answers with the error page of the person's area.
func (s *Server) accountError(w http.ResponseWriter, r *http.Request, status int, key string) {
	s.showError(w, r, status, errorView{Key: key, Account: true})
}

// unavailableAccount answers a store failure: each store call is one
// transaction, so the failed one changed nothing.
func (s *Server) unavailableAccount(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.cfg.Logger.Error("store failed: "+what, "error", err)
	w.Header().Set("Retry-After", strconv.Itoa(policy.RetryAfterUnavailable))
	s.showError(w, r, http.StatusServiceUnavailable, errorView{Account: true, Unavailable: true,
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
