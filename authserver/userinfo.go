package authserver

import (
	"net/http"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// handleUserInfo serves the OpenID Connect UserInfo endpoint. It is a
// protected resource like any other: errors are RFC 6750 challenges.
func (s *Server) handleUserInfo(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		writeOAuthError(w, &oauthError{Status: http.StatusMethodNotAllowed, Code: "invalid_request", Description: "use GET or POST"})
		return
	}
	tok, ch := s.guard.Check(w, r, policy.Requirement{Scopes: []string{"openid"}})
	if ch != nil {
		ch.ResourceMetadata = s.ResourceMetadataURL()
		ch.Write(w)
		return
	}
	id := store.Identity{Subject: tok.Subject, Email: tok.Email, Name: tok.Name, OrgID: tok.OrgID, Roles: tok.Roles}
	body := claims(&id, tok.Scopes)
	writeJSON(w, http.StatusOK, &body)
}
