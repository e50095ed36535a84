package authserver

import (
	"errors"
	"net/http"
	"strings"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// handleIntrospect serves RFC 7662 introspection. A client sees its own
// tokens only; every other answer is {"active": false}. The fields come
// from the same view the protected resources enforce.
func (s *Server) handleIntrospect(w http.ResponseWriter, r *http.Request) {
	form, e := readForm(w, r)
	if e != nil {
		s.refuse(w, r, e)
		return
	}
	client, e := s.authenticateClient(r, form)
	if e != nil {
		s.refuse(w, r, e)
		return
	}
	raw := form.Get("token")
	if raw == "" {
		s.refuse(w, r, errInvalidRequest("token is required"))
		return
	}
	inactive := map[string]any{"active": false}
	t, g, err := s.store.GetToken(r.Context(), tokenKey(raw))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		// "active": false would make the client drop a token that may be
		// fine; it is told to ask again instead.
		s.refuse(w, r, s.unavailable("introspection", err))
		return
	}
	now := s.cfg.Now()
	if err != nil || t.ClientID != client.ID || t.Revoked || g.Revoked || !now.Before(t.ExpiresAt) ||
		(t.Kind == store.TokenRefresh && store.DecideRotate(t, now, s.cfg.RefreshGrace.D()) == store.RotateReplay) {
		writeJSON(w, http.StatusOK, inactive)
		return
	}
	pt := s.policyToken(t, g)
	body := map[string]any{
		"active":        true,
		"scope":         strings.Join(pt.Scopes, " "),
		"client_id":     pt.ClientID,
		"sub":           pt.Subject,
		"aud":           pt.Resource,
		"iss":           pt.Issuer,
		"exp":           pt.ExpiresAt.Unix(),
		"iat":           pt.IssuedAt.Unix(),
		"audience_type": pt.Audience,
	}
	switch {
	case t.Kind != store.TokenAccess:
		body["token_type"] = "refresh_token"
	case t.JKT != "":
		body["token_type"] = policy.SchemeDPoP
	default:
		body["token_type"] = policy.SchemeBearer
	}
	if t.JKT != "" {
		// RFC 9449 §6.2: the key the token is bound to.
		body["cnf"] = map[string]string{"jkt": t.JKT}
	}
	writeJSON(w, http.StatusOK, body)
}
