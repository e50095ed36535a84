package authserver

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// tokenResponse is the RFC 6749 §5.1 success body.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope"`
	RefreshToken string `json:"refresh_token,omitempty"`
	IDToken      string `json:"id_token,omitempty"`
}

// Grant types of the token endpoint.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
)

// grantType is a grant the token endpoint accepts: its grant_type and
// what redeems it for the client that authenticated, from the request's
// form, with the thumbprint of the DPoP key the client proved holding
// ("" without a proof).
type grantType struct {
	name string
	// step is the connection doctor's step of a request of the grant.
	step   string
	redeem func(s *Server, ctx context.Context, client *store.Client, form url.Values, jkt string) (*tokenResponse, *oauthError)
}

// grantTypes are the token endpoint's grants, in the order discovery and
// registration list them.
var grantTypes = [...]grantType{
	{GrantAuthorizationCode, StepToken, (*Server).exchangeCode},
	{GrantRefreshToken, StepRefresh, (*Server).refresh},
}

// GrantTypes are the grant_type values the token endpoint accepts.
func GrantTypes() []string {
	names := make([]string, len(grantTypes))
	for i, g := range grantTypes {
		names[i] = g.name
	}
	return names
}

// grantTypeOf returns the grant of a grant_type, nil for one not accepted.
func grantTypeOf(name string) *grantType {
	for i := range grantTypes {
		if grantTypes[i].name == name {
			return &grantTypes[i]
		}
	}
	return nil
}

// handleToken serves POST /api/oauth/token: the form is read and the
// client authenticated once, then the grant named by grant_type redeems.
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	form, e := readForm(w, r)
	if e != nil {
		s.refuse(w, r, e)
		return
	}
	// Every refusal from here on is noted for the connection doctor,
	// under the client_id the request names and its grant's step.
	clientID, step := clip(form.Get("client_id")), StepToken
	refuse := func(e *oauthError) {
		s.noteRefused(step, clientID, e)
		s.refuse(w, r, e)
	}
	name := form.Get("grant_type")
	if name == "" {
		refuse(errInvalidRequest("grant_type is required"))
		return
	}
	grant := grantTypeOf(name)
	if grant == nil {
		refuse(&oauthError{Status: http.StatusBadRequest, Code: "unsupported_grant_type",
			Description: "supported grant types: " + strings.Join(GrantTypes(), ", ")})
		return
	}
	step = grant.step
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
		span.SetAttributes(AttrGrantType.String(grant.name), AttrClientID.String(clientID))
	}
	if s.limitedKey(w, r, s.limits.tokenClient, "client\x00"+form.Get("client_id"), false) {
		s.noteStep(step, clientID, "", ReasonRateLimited, "rate_limited", "")
		return
	}
	client, e := s.authenticateClient(r, form)
	if e != nil {
		refuse(e)
		return
	}
	proof, e := s.tokenProof(r)
	if e == nil && proof == nil && s.requiresDPoP(client) {
		e = errInvalidDPoPProof("this school issues this client DPoP-bound tokens only: send a DPoP proof (RFC 9449) with the token request").
			because(ReasonDPoPRequired, "")
	}
	if e != nil {
		refuse(e)
		return
	}
	resp, e := grant.redeem(s, r.Context(), client, form, proofKey(proof))
	if proof != nil {
		// The nonce to use next, with the answer whatever it is, so
		// that the client's next request needs no use_dpop_nonce round.
		if n := s.dpop.NonceFor(proof); n != "" {
			w.Header().Set("DPoP-Nonce", n)
		}
	}
	if e != nil {
		refuse(e)
		return
	}
	s.passed(step, clientID, grant.name)
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
		span.SetAttributes(AttrOutcome.String("issued"))
	}
	s.cfg.Observer.TokenIssued(grant.name)
	writeTokenResponse(w, resp)
}

// exchangeCode redeems an authorization code (RFC 6749 §4.1.3, RFC 7636,
// RFC 8707). With a DPoP proof of key jkt the tokens are bound to it (RFC
// 9449 §5): the access token always, the refresh token of a public
// client (a confidential client's is bound by its secret).
func (s *Server) exchangeCode(ctx context.Context, client *store.Client, form url.Values, jkt string) (*tokenResponse, *oauthError) {
	code, verifier, redirectURI := form.Get("code"), form.Get("code_verifier"), form.Get("redirect_uri")
	switch {
	case code == "":
		return nil, errInvalidRequest("code is required")
	case redirectURI == "":
		return nil, errInvalidRequest("redirect_uri is required")
	case verifier == "":
		return nil, errInvalidRequest("code_verifier is required")
	case !validVerifier(verifier):
		return nil, errInvalidRequest("code_verifier must be 43-128 unreserved characters")
	}
	now := s.cfg.Now()
	// What the transaction's function sets, in one value: the function
	// goes to the store, so what it captures is on the heap, and one
	// allocation is cheaper than one per variable.
	var out struct {
		resp  *tokenResponse
		fail  *oauthError
		grant *store.Grant
		nonce string
	}
	err := s.store.RedeemCode(ctx, tokenKey(code), func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
		out.resp, out.fail = nil, nil
		if out.fail = s.checkCode(c, client, redirectURI, verifier, form["resource"], jkt, now); out.fail != nil {
			out.fail.subject = c.Identity.Subject
			return nil, nil, out.fail
		}
		out.grant = &store.Grant{ID: newGrantID(now), ClientID: client.ID, Audience: c.Request.Audience,
			Scopes: c.Request.Scopes, Resource: c.Request.Resource, Identity: c.Identity,
			AuthTime: c.AuthTime, CreatedAt: now}
		out.nonce = c.Request.Nonce
		var toks []store.IssuedToken
		out.resp, toks = s.mintTokens(out.grant, out.grant.Scopes, now, jkt, refreshKey(client, jkt))
		return out.grant, toks, nil
	})
	switch {
	case err == nil:
		return s.withIDToken(ctx, out.resp, out.grant, out.nonce, now)
	case out.fail != nil:
		return nil, out.fail
	case errors.Is(err, store.ErrNotFound):
		return nil, errInvalidGrant("the authorization code is invalid").because(ReasonCodeUnknown, "")
	case errors.Is(err, store.ErrCodeReuse):
		s.cache.purge()
		return nil, errInvalidGrant("the authorization code was already used; the tokens it issued are revoked").
			because(ReasonCodeReplayed, "")
	}
	// The transaction took no effect: the same code may be redeemed again.
	return nil, s.unavailable("redeeming the code", err)
}

// withIDToken adds the ID token (when openid was requested and a key
// may sign, i.e. discovery lists the ID-token fields). It is signed after
// the store's transaction, so concurrent exchanges sign in parallel
// instead of one after another under the write lock. Should signing fail,
// the grant just stored is revoked: nothing half-issued stays valid.
func (s *Server) withIDToken(ctx context.Context, resp *tokenResponse, g *store.Grant, nonce string, now time.Time) (*tokenResponse, *oauthError) {
	if !slices.Contains(g.Scopes, "openid") || !s.keys.CanSign(now) {
		return resp, nil
	}
	idt, err := s.idToken(g, nonce, now)
	if err != nil {
		s.cfg.Logger.Error("signing an ID token", "error", err)
		if err := s.store.RevokeGrant(ctx, g.ID); err != nil {
			s.cfg.Logger.Error("revoking the grant of an unsigned ID token", "error", err)
		}
		s.cache.purge()
		return nil, errServer("the ID token could not be signed")
	}
	resp.IDToken = idt
	return resp, nil
}

func (s *Server) checkCode(c *store.Code, client *store.Client, redirectURI, verifier string, resources []string, jkt string, now time.Time) *oauthError {
	switch {
	case now.After(c.ExpiresAt):
		return errInvalidGrant("the authorization code has expired").
			because(ReasonCodeExpired, "issued for "+s.cfg.CodeTTL.String())
	case c.Request.ClientID != client.ID:
		return errInvalidGrant("the authorization code was issued to another client").because(ReasonCodeOtherClient, "")
	case c.Request.RedirectURI != redirectURI:
		// Both are the client's own addresses, which its developer
		// compares: the usual difference is a slash or a port.
		return errInvalidGrant("redirect_uri differs from the authorization request").
			because(ReasonRedirectMismatch, "sent "+redirectURI+"; the authorization request had "+c.Request.RedirectURI)
	case !pkceMatches(verifier, c.Request.CodeChallenge):
		return errInvalidGrant("code_verifier does not match the code_challenge").because(ReasonVerifierMismatch, "")
	case c.Request.DPoPJKT != "" && c.Request.DPoPJKT != jkt:
		// RFC 9449 §10: the code is bound to the key dpop_jkt named.
		return errInvalidGrant("the authorization code is bound to a DPoP key (dpop_jkt): redeem it with a DPoP proof of that key").
			because(ReasonCodeDPoPKey, "")
	}
	if len(resources) == 0 && c.Request.Audience == store.AudienceMember {
		return errInvalidTarget("resource is required for member tokens; use "+s.cfg.Issuer).because(ReasonResourceMissing, "")
	}
	if len(resources) > 0 {
		if _, e := s.checkResource(resources, c.Request.Audience); e != nil {
			return e
		}
	}
	return nil
}

// mintTokens creates a new access and refresh token for a grant, bound to
// the DPoP keys accessJKT and refreshJKT ("": unbound). A bound access
// token is of token_type DPoP (RFC 9449 §5).
func (s *Server) mintTokens(g *store.Grant, scopes []string, now time.Time, accessJKT, refreshJKT string) (*tokenResponse, []store.IssuedToken) {
	access, refresh := newTimedToken(prefixAccess, now), newTimedToken(prefixRefresh, now)
	tokenType := policy.SchemeBearer
	if accessJKT != "" {
		tokenType = policy.SchemeDPoP
	}
	resp := &tokenResponse{AccessToken: access, TokenType: tokenType,
		ExpiresIn: int64(s.cfg.AccessTTL.D() / time.Second), Scope: strings.Join(scopes, " "),
		RefreshToken: refresh}
	return resp, []store.IssuedToken{
		{Hash: tokenKey(access), Token: &store.Token{Kind: store.TokenAccess, GrantID: g.ID, ClientID: g.ClientID,
			Scopes: scopes, IssuedAt: now, ExpiresAt: now.Add(s.cfg.AccessTTL.D()), JKT: accessJKT}},
		{Hash: tokenKey(refresh), Token: &store.Token{Kind: store.TokenRefresh, GrantID: g.ID, ClientID: g.ClientID,
			Scopes: g.Scopes, IssuedAt: now, ExpiresAt: now.Add(s.cfg.RefreshTTL.D()), JKT: refreshJKT}},
	}
}

// refreshKey is the key a client's new refresh token is bound to: a
// public client's proof key (RFC 9449 §5: its refresh tokens are
// bound), nothing for a confidential client, whose secret binds them.
func refreshKey(client *store.Client, jkt string) string {
	if client.Public() {
		return jkt
	}
	return ""
}

// refresh exchanges a refresh token for a new pair, rotating it. A
// refresh token bound to a DPoP key rotates only for a proof of that key
// (the store refuses anyone else, changing nothing); the new tokens are
// bound as a code exchange's are, to the proof's key.
func (s *Server) refresh(ctx context.Context, client *store.Client, form url.Values, jkt string) (*tokenResponse, *oauthError) {
	raw := form.Get("refresh_token")
	if raw == "" {
		return nil, errInvalidRequest("refresh_token is required")
	}
	now := s.cfg.Now()
	var out struct { // one allocation, as in exchangeCode
		resp *tokenResponse
		fail *oauthError
	}
	err := s.store.RotateRefresh(ctx, tokenKey(raw), jkt, now, s.cfg.RefreshGrace.D(), func(t *store.Token, g *store.Grant) ([]store.IssuedToken, error) {
		out.resp, out.fail = nil, nil
		scopes, e := s.checkRefresh(t, g, client, form, now)
		if e != nil {
			e.subject = g.Identity.Subject
			out.fail = e
			return nil, e
		}
		var toks []store.IssuedToken
		out.resp, toks = s.mintTokens(g, scopes, now, jkt, refreshKey(client, jkt))
		return toks, nil
	})
	switch {
	case err == nil:
		return out.resp, nil
	case out.fail != nil:
		return nil, out.fail
	case errors.Is(err, store.ErrNotFound):
		return nil, errInvalidGrant("the refresh token is invalid").because(ReasonTokenUnknown, "")
	case errors.Is(err, store.ErrRefreshReuse):
		s.cache.purge()
		return nil, errInvalidGrant("the refresh token was already used; the grant is revoked").because(ReasonRefreshReuse, "")
	case errors.Is(err, store.ErrWrongKey):
		return nil, errInvalidGrant("the refresh token is bound to a DPoP key: refresh with a DPoP proof of that key").
			because(ReasonRefreshWrongKey, "")
	}
	// The transaction took no effect: the same refresh token still works.
	return nil, s.unavailable("refreshing the token", err)
}

// checkRefresh validates a refresh request and returns the scopes of the
// new access token: the grant's, or a narrower set the client asks for.
func (s *Server) checkRefresh(t *store.Token, g *store.Grant, client *store.Client, form url.Values, now time.Time) ([]string, *oauthError) {
	switch {
	case t.Kind != store.TokenRefresh:
		return nil, errInvalidGrant("the token is not a refresh token").because(ReasonTokenUnknown, "an access token was sent")
	case t.Revoked || g.Revoked:
		return nil, errInvalidGrant("the refresh token has been revoked").because(ReasonTokenRevoked, "")
	case now.After(t.ExpiresAt):
		return nil, errInvalidGrant("the refresh token has expired").because(ReasonTokenExpired, "")
	case t.ClientID != client.ID:
		return nil, errInvalidGrant("the refresh token was issued to another client").because(ReasonCodeOtherClient, "")
	}
	if res := form["resource"]; len(res) > 0 {
		if _, e := s.checkResource(res, g.Audience); e != nil {
			return nil, e
		}
	}
	// An operator may have narrowed what the client may hold since the
	// grant: refreshed tokens carry only what is still allowed, and
	// offline_access, which every client may hold, only beside a scope
	// that grants something.
	var granted []string
	for _, sc := range t.Scopes {
		if sc == policy.OfflineAccess || slices.Contains(allowedScopes(client), sc) {
			granted = append(granted, sc)
		}
	}
	if !slices.ContainsFunc(granted, policy.IsScope) {
		return nil, errInvalidGrant("the client may no longer hold any of the granted scopes; authorize again").
			because(ReasonScopesGone, "")
	}
	requested := strings.Fields(form.Get("scope"))
	if len(requested) == 0 {
		return granted, nil
	}
	for _, sc := range requested {
		if !slices.Contains(granted, sc) {
			return nil, errInvalidScope("scope "+sc+" is not granted to this client; a refresh cannot widen scope").
				because(ReasonScopeWiden, sc)
		}
	}
	return dedupe(requested), nil
}
