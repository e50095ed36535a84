package authserver

import (
	"net/http"
	"strconv"

	"github.com/schoolgate/schoolgate/i18n"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// The server answers people's browsers (authorization, the consent form,
// the person's area, the admin area) with HTML pages it does not draw:
// package pages draws them, through Pages. The line between the two: the
// protocol decides and records — a request parked for consent, the
// decision the consent form posts, what went wrong and what status it
// gets — and the pages word it in the person's language, and read and
// answer their own areas' forms through the server's exported
// operations. The route table (routes.go) still dispatches, limits and
// counts every path, the pages' areas among them.

// Pages are the HTML pages of one server (Config.Pages makes them).
type Pages interface {
	// Consent shows the consent page of a parked request. Its form posts
	// to sitepath.Consent the fields request (c.RequestID), csrf_token
	// (c.CSRF) and decision ("approve"; anything else denies).
	Consent(w http.ResponseWriter, r *http.Request, c *ConsentPage)
	// Error answers with the error page.
	Error(w http.ResponseWriter, r *http.Request, status int, e ErrorPage)
	// Account serves the person's own area (sitepath.AccountPages and
	// below), Admin the operator's (sitepath.Admin and below), Asset what
	// the pages load (below sitepath.Assets).
	Account(w http.ResponseWriter, r *http.Request)
	Admin(w http.ResponseWriter, r *http.Request)
	Asset(w http.ResponseWriter, r *http.Request)
}

// ConsentPage is a request parked for the person's consent, and what the
// protocol decided the page says of it.
type ConsentPage struct {
	// Client asks for Scopes, to be answered at RedirectURI.
	Client      ClientInfo
	Scopes      []string
	RedirectURI string
	// Person is who is signed in and asked.
	Person *store.Identity
	// Prior is what the person approved before; Approved says it covers
	// every scope asked. AskEachTime: the redirect URI does not prove the
	// client, which is why a person who approved is asked again.
	Prior                 []string
	Approved, AskEachTime bool
	// RequestID names the parked request; CSRF is the token whose hash
	// is kept with it. Both go into the form.
	RequestID, CSRF string
}

// ErrorPage is what the error page says: the message Key in the catalog
// (package i18n) with its placeholders' name-value pairs, Args. Detail is
// a technical detail for a developer, in English: shown apart from the
// message, never put into it. Unavailable says the request may succeed
// in a moment.
type ErrorPage struct {
	Key         string
	Args        []any
	Detail      string
	Unavailable bool
}

// showError answers with the error page.
func (s *Server) showError(w http.ResponseWriter, r *http.Request, status int, e ErrorPage) {
	s.pages.Error(w, r, status, e)
}

// errorPage answers the person directly with the message key (and its
// placeholders' name-value pairs); used where redirecting to the client
// is not safe.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, status int, key string, args ...any) {
	s.showError(w, r, status, ErrorPage{Key: key, Args: args})
}

// unavailablePage answers a browser whose request the store failed: 503
// with Retry-After, and never a redirect to the client, which would end
// the authorization with an error the client acts on (and the state it
// consumes) when a retry in a moment would have succeeded. key tells the
// person how to retry; the store's error goes to the log only.
func (s *Server) unavailablePage(w http.ResponseWriter, r *http.Request, key, what string, err error) {
	s.cfg.Logger.Error("store failed: "+what, "error", err)
	w.Header().Set("Retry-After", strconv.Itoa(policy.RetryAfterUnavailable))
	s.showError(w, r, http.StatusServiceUnavailable, ErrorPage{Key: key, Unavailable: true})
}

// handleAccount and handleAdmin hand the pages' areas to the pages, once
// the route table has limited and counted the request.
func (s *Server) handleAccount(w http.ResponseWriter, r *http.Request) { s.pages.Account(w, r) }
func (s *Server) handleAdmin(w http.ResponseWriter, r *http.Request)   { s.pages.Admin(w, r) }

// What a person is told to do when the store failed, by where they are
// in the authorization (message keys).
const (
	retryReload = "error.retry_reload"
	retryForm   = "error.retry_form"
	retryStart  = "error.retry_start"
)

func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

// plainPages are the pages of a server built without any (Config.Pages
// nil): the error page is its English message as plain text, the
// consent page cannot be shown (the authorization ends there), and the
// areas are not there.
type plainPages struct{}

func (plainPages) Consent(w http.ResponseWriter, r *http.Request, _ *ConsentPage) {
	plainPages{}.Error(w, r, http.StatusInternalServerError, ErrorPage{Key: "error.not_shown"})
}

func (plainPages) Error(w http.ResponseWriter, _ *http.Request, status int, e ErrorPage) {
	noStore(w)
	http.Error(w, i18n.Msg(i18n.Languages[0], e.Key, e.Args...), status)
}

func (plainPages) Account(w http.ResponseWriter, _ *http.Request) { WriteNotFound(w) }
func (plainPages) Admin(w http.ResponseWriter, _ *http.Request)   { WriteNotFound(w) }
func (plainPages) Asset(w http.ResponseWriter, _ *http.Request)   { WriteNotFound(w) }
