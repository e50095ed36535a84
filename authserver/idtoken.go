package authserver

import (
	"slices"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// userClaims are the claims about the person: sub always, email with
// "email", name with "profile", org_id and roles always (they say which
// school and what role, which every client of a school needs). A struct,
// not a map: every code exchange encodes one.
type userClaims struct {
	Subject string   `json:"sub"`
	Email   string   `json:"email,omitempty"`
	Name    string   `json:"name,omitempty"`
	OrgID   string   `json:"org_id,omitempty"`
	Roles   []string `json:"roles"`
}

// idTokenClaims are an ID token's claims.
type idTokenClaims struct {
	Issuer string `json:"iss"`
	userClaims
	Audience string `json:"aud"`
	IssuedAt int64  `json:"iat"`
	Expires  int64  `json:"exp"`
	AuthTime int64  `json:"auth_time"`
	Nonce    string `json:"nonce,omitempty"`
}

// claims returns the claims about the person the scopes allow.
func claims(id *store.Identity, scopes []string) userClaims {
	c := userClaims{Subject: id.Subject, OrgID: id.OrgID, Roles: id.Roles}
	if slices.Contains(scopes, "email") {
		c.Email = id.Email
	}
	if slices.Contains(scopes, "profile") {
		c.Name = id.Name
	}
	if c.Roles == nil {
		c.Roles = []string{}
	}
	return c
}

// idToken signs an OpenID Connect ID token for a grant.
func (s *Server) idToken(g *store.Grant, nonce string, now time.Time) (string, error) {
	c := idTokenClaims{Issuer: s.cfg.Issuer, userClaims: claims(&g.Identity, g.Scopes),
		Audience: g.ClientID, IssuedAt: now.Unix(), Expires: now.Add(idTokenTTL).Unix(),
		AuthTime: g.AuthTime.Unix(), Nonce: nonce}
	// Written by hand into a pooled buffer (jsonappend.go): the
	// signature copies it, encoded, into the token.
	buf := getJSONBuffer()
	defer putJSONBuffer(buf)
	*buf = c.appendJSON(*buf)
	jwt, err := s.keys.Sign(*buf, now)
	return string(jwt), err
}
