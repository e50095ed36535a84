package demoschool

import (
	"net/http"
)

// loginPage is templates/login.html; its field names and ids are part of
// the contract with the browser tests.
var loginPage = newPage("login.html")

type loginForm struct {
	ReturnTo string
	Email    string
	Error    string
}

func (s *school) loginForm(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	s.renderLogin(w, r, http.StatusOK, loginForm{ReturnTo: r.URL.Query().Get("return_to")})
}

// login checks the credentials, starts a session and sends the browser on.
// The return_to is checked only on the way out, so the form can carry any
// value back without the check being skipped.
func (s *school) login(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	email, returnTo := r.PostForm.Get("email"), r.PostForm.Get("return_to")
	u := s.users.authenticate(email, r.PostForm.Get("password"))
	if u == nil {
		s.renderLogin(w, r, http.StatusUnauthorized, loginForm{
			ReturnTo: returnTo, Email: email, Error: "Wrong e-mail or password.",
		})
		return
	}
	// A fresh id on every sign-in, and the old one dropped, so an id planted
	// before sign-in (session fixation) is worth nothing.
	if old := sessionID(r); old != "" {
		s.sessions.delete(old)
	}
	http.SetCookie(w, sessionCookie(r, s.sessions.create(u.Sub)))
	http.Redirect(w, r, safeReturnTo(r, returnTo), http.StatusSeeOther)
}

// logout ends the session. It is POST only so that a link or an image on
// another site cannot sign people out.
func (s *school) logout(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	if id := sessionID(r); id != "" {
		s.sessions.delete(id)
	}
	http.SetCookie(w, sessionCookie(r, ""))
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	returnTo := r.URL.Query().Get("return_to")
	if r.ParseForm() == nil && r.PostForm.Get("return_to") != "" {
		returnTo = r.PostForm.Get("return_to")
	}
	http.Redirect(w, r, safeReturnTo(r, returnTo), http.StatusSeeOther)
}

func (s *school) renderLogin(w http.ResponseWriter, r *http.Request, status int, f loginForm) {
	render(w, status, loginPage, s.pageData(r, f))
}

// noStore keeps pages with personal data or credentials out of caches.
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
}
