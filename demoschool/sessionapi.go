package demoschool

import "net/http"

// sessionInfo serves GET /api/session, the lookup the gateway makes with
// the browser's forwarded Cookie header to learn who is signed in.
func (s *school) sessionInfo(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	w.Header().Set("Vary", "Cookie")
	u := s.users.bySubject(s.sessions.lookup(sessionID(r)))
	if u == nil {
		writeError(w, http.StatusUnauthorized, "not_signed_in", "no valid session cookie")
		return
	}
	writeJSON(w, http.StatusOK, u)
}
