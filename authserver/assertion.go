package authserver

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/policy"
)

// AssertionType is the typ header of an identity assertion. The site's
// ID tokens are signed with the same keys (typ "JWT", aud a client_id);
// the distinct typ and an aud naming the legacy server, never a client,
// keep either from being accepted as the other.
const AssertionType = "school-assertion+jwt"

// AssertionTTL bounds an assertion's life; it never outlives its token.
const AssertionTTL = 5 * time.Minute

// assertionClaims is what the legacy server learns from an assertion: the
// X-School-* headers, signed. TokenAudience is the X-School-Audience
// value (member or operator), which aud cannot carry.
type assertionClaims struct {
	Issuer        string   `json:"iss"`
	Audience      string   `json:"aud"`
	Subject       string   `json:"sub"`
	Email         string   `json:"email"`
	Name          string   `json:"name"`
	OrgID         string   `json:"org_id"`
	Roles         []string `json:"roles"`
	Scope         string   `json:"scope"`
	ClientID      string   `json:"client_id"`
	TokenAudience string   `json:"token_audience"`
	IssuedAt      int64    `json:"iat"`
	Expires       int64    `json:"exp"`
	// Cnf is the key a DPoP-bound token is bound to (RFC 9449 §6.1), so
	// that the legacy server may tell a sender-constrained call; absent
	// for a bearer token.
	Cnf *confirmation `json:"cnf,omitempty"`
}

// confirmation is RFC 7800's cnf claim with RFC 9449's jkt member.
type confirmation struct {
	JKT string `json:"jkt"`
}

// IdentityAssertion returns the signed identity assertion of a validated
// token for the legacy server named by audience. It is signed once per
// validated token: the result is cached with the token, which the
// validation cache shares between requests.
func (s *Server) IdentityAssertion(t *policy.Token, audience string) (string, error) {
	return t.Assertion(audience, s.cfg.Now(), func() (string, time.Time, error) {
		return s.signAssertion(t, audience)
	})
}

// signAssertion signs the claims of t for audience, valid until the token
// expires or AssertionTTL has passed, whichever comes first.
func (s *Server) signAssertion(t *policy.Token, audience string) (string, time.Time, error) {
	now := s.cfg.Now()
	limit := now.Add(AssertionTTL)
	exp := limit.Unix()
	if end := t.ExpiresAt; end.Before(limit) {
		// The gateway accepts the token until its very instant, and exp
		// is whole seconds: rounded down, a request let through in the
		// token's last fraction of a second would carry an assertion
		// already expired, which the legacy server refuses (and each
		// such request would sign anew, the cache being past). So the
		// assertion names the second the token's life ends in.
		exp = end.Unix()
		if end.Nanosecond() != 0 {
			exp++
		}
	}
	roles := t.Roles
	if roles == nil {
		roles = []string{}
	}
	claims := assertionClaims{
		Issuer: s.cfg.Issuer, Audience: audience, Subject: t.Subject, Email: t.Email, Name: t.Name,
		OrgID: t.OrgID, Roles: roles, Scope: strings.Join(t.Scopes, " "), ClientID: t.ClientID,
		TokenAudience: t.Audience, IssuedAt: now.Unix(), Expires: exp,
	}
	if t.JKT != "" {
		claims.Cnf = &confirmation{JKT: t.JKT}
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", time.Time{}, err
	}
	jwt, err := s.keys.signTyped(payload, AssertionType, now)
	if err != nil {
		return "", time.Time{}, err
	}
	// Cached only while the verifier would still accept it: exp is whole
	// seconds, so the cache ends at the second exp names.
	return string(jwt), time.Unix(exp, 0), nil
}
