package authserver

import (
	"errors"
	"net/http"

	"github.com/schoolgate/schoolgate/store"
)

// handleRevoke serves RFC 7009 revocation. Whatever the token, a client
// that authenticated gets 200: revealing whether a token existed, or whose
// it was, would help an attacker.
func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) {
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
	hash := tokenKey(raw)
	t, g, err := s.store.GetToken(r.Context(), hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		// Not the 200 of an unknown token: the client would believe the
		// token revoked while it still works.
		s.refuse(w, r, s.unavailable("revocation", err))
		return
	case t.ClientID == client.ID:
		e := store.AuditEvent{Type: store.EventTokenRevoked, Subject: g.Identity.Subject, ClientID: client.ID,
			Actor: store.ActorClient, Target: g.ID, Outcome: "token revoked", Detail: t.Kind}
		if store.DecideRevoke(t) == store.RevokeWholeGrant {
			e.Outcome = "grant revoked"
		}
		if err := s.store.RevokeToken(s.record(r.Context(), e), hash); err != nil {
			s.refuse(w, r, s.unavailable("revocation", err))
			return
		}
		s.cache.purge()
		if store.DecideRevoke(t) == store.RevokeWholeGrant && !g.Revoked {
			s.cfg.Observer.GrantDisconnected(DisconnectedByClient)
		}
	}
	noStore(w)
	w.WriteHeader(http.StatusOK)
}
