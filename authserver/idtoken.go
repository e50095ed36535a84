package authserver

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// claims returns the ID-token claims the scopes allow: sub always,
// email with "email", name with "profile", org_id and roles always (they
// say which school and what role, which every client of a school needs).
func claims(id *store.Identity, scopes []string) map[string]any {
	c := map[string]any{"sub": id.Subject}
	if slices.Contains(scopes, "email") && id.Email != "" {
		c["email"] = id.Email
	}
	if slices.Contains(scopes, "profile") && id.Name != "" {
		c["name"] = id.Name
	}
	if id.OrgID != "" {
		c["org_id"] = id.OrgID
	}
	roles := id.Roles
	if roles == nil {
		roles = []string{}
	}
	c["roles"] = roles
	return c
}

// idToken signs an OpenID Connect ID token for a grant.
func (s *Server) idToken(g *store.Grant, nonce string, now time.Time) (string, error) {
	c := claims(&g.Identity, g.Scopes)
	c["iss"] = s.cfg.Issuer
	c["aud"] = g.ClientID
	c["iat"] = now.Unix()
	c["exp"] = now.Add(idTokenTTL).Unix()
	c["auth_time"] = g.AuthTime.Unix()
	if nonce != "" {
		c["nonce"] = nonce
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	jwt, err := s.keys.Sign(payload, now)
	return string(jwt), err
}
