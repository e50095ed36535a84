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
// own grants at this school and nobody else's; a disconnect is a
// form POST checked like the admin area's (the browser's word on where it
// came from, then a token bound to the person and the time the page was
// rendered).
const accountPathDisconnect = sitepath.AccountApplications + "/disconnect"

// accountNotices are the fixed messages a redirect may ask for; nothing
// of the query string is echoed.
var accountNotices = map[string]string{
	"disconnected": "The application was disconnected. Its access ended now, on every device you allowed it on: " +
		"it can no longer act for you, and if it asks again you will see the consent page.",
	"already": "That application had been disconnected already. Nothing else was changed.",
}

type accountView struct {
	School, Person, CSRF string
	Notice               string
	// Apps are the person's connections, one per application.
	Apps []ConnectionInfo
	// Next is the link to the following page, empty on the last one.
	Next string
	// More: this is not the first page.
	More bool
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
			s.accountError(w, http.StatusMethodNotAllowed, "This page can only be viewed.")
			return
		}
		s.applicationsPage(w, r)
	case accountPathDisconnect:
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			s.accountError(w, http.StatusMethodNotAllowed, "Use the Disconnect button on your applications page.")
			return
		}
		s.disconnect(w, r)
	default:
		s.accountError(w, http.StatusNotFound, "There is no such page.")
	}
}

// accountPerson is who the legacy site says is signed in; when nobody
// is, or the site cannot say, the answer has been sent and it is nil.
func (s *Server) accountPerson(w http.ResponseWriter, r *http.Request) *store.Identity {
	id, err := s.lookupSession(r.Context(), r)
	if err != nil {
		s.cfg.Logger.Error("account: session lookup failed", "error", err)
		w.Header().Set("Retry-After", strconv.Itoa(policy.RetryAfterUnavailable))
		s.accountError(w, http.StatusServiceUnavailable, "The school site could not confirm who is signed in. Wait a moment, then reload this page.")
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
		s.accountError(w, http.StatusInternalServerError, "The sign-in page is misconfigured.")
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
		s.unavailableAccount(w, "account: loading the CSRF key", err)
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
		s.accountError(w, http.StatusBadRequest, "This link to a further page is not valid. Open your applications page again.")
		return
	case err != nil:
		s.unavailableAccount(w, "account: listing the applications", err)
		return
	}
	v := accountView{School: s.schoolName(), Person: personLabel(id), Notice: accountNotices[q.Get("done")],
		CSRF: accountCSRFToken(key, id.Subject, s.cfg.Now()), More: cursor != ""}
	for _, c := range page.Connections {
		// Grants that act as a school operator belong to the admin side
		// of a person who is one; anyone else never sees them listed.
		if c.OperatorOnly() && !id.IsOperator() {
			continue
		}
		v.Apps = append(v.Apps, c)
	}
	if page.Next != "" {
		v.Next = sitepath.AccountApplications + "?" + url.Values{"after": {page.Next}}.Encode()
	}
	body, err := renderPage(accountTmpl, v)
	if err != nil {
		s.cfg.Logger.Error("account: rendering the applications page", "error", err)
		s.accountError(w, http.StatusInternalServerError, "The page could not be shown.")
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
		s.accountError(w, http.StatusForbidden, "The form was submitted from another site. Nothing was changed.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.accountError(w, http.StatusBadRequest, "The form could not be read. Nothing was changed.")
		return
	}
	id, key := s.accountPersonKey(w, r)
	if id == nil {
		return
	}
	if !checkAccountCSRF(key, id.Subject, r.PostForm.Get("csrf_token"), s.cfg.Now()) {
		s.accountError(w, http.StatusForbidden, "The form has expired or was not issued to you. Nothing was changed: open your applications page again and retry.")
		return
	}
	_, err := s.DisconnectClient(r.Context(), r.PostForm.Get("client_id"), id.Subject, DisconnectedByMember)
	done := "disconnected"
	switch {
	case errors.Is(err, ErrAlreadyDisconnected):
		done = "already"
	case errors.Is(err, store.ErrNotFound):
		s.accountError(w, http.StatusNotFound, "None of your connected applications matches this form. Nothing was changed: open your applications page again.")
		return
	case err != nil:
		s.unavailableAccount(w, "account: disconnecting an application", err)
		return
	}
	http.Redirect(w, r, sitepath.AccountApplications+"?done="+done, http.StatusSeeOther)
}

// accountError answers with the error page of the person's area.
func (s *Server) accountError(w http.ResponseWriter, status int, msg string) {
	s.showError(w, status, errorView{Message: msg, Account: true})
}

// unavailableAccount answers a store failure: each store call is one
// transaction, so the failed one changed nothing.
func (s *Server) unavailableAccount(w http.ResponseWriter, what string, err error) {
	s.cfg.Logger.Error("store failed: "+what, "error", err)
	w.Header().Set("Retry-After", strconv.Itoa(policy.RetryAfterUnavailable))
	s.showError(w, http.StatusServiceUnavailable, errorView{Account: true, Unavailable: true,
		Message: "Your applications cannot be shown or changed just now: the school's sign-in is temporarily unavailable. Nothing was changed. Wait a moment, then try again."})
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
