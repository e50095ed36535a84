package policy

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

// Guard authenticates requests to a school's protected resources: the
// token's lookup, the origin tokens must be bound to, and the school's
// DPoP (nil: off).
type Guard struct {
	Lookup Lookup
	Origin string
	DPoP   *DPoP
	// Refused, when set, is told of each valid token Check refuses
	// (another origin, its binding, its scopes), so that the school can
	// say why an application's calls fail; nil: nobody is.
	Refused func(tok *Token, ch *Challenge)
}

// Check authenticates a request to a protected resource and applies req.
// It returns the token, or the challenge to send. A missing token is 401
// invalid_token too: that is the code promised for /account/graphql
// without a token.
//
// A token bound to a DPoP key is accepted with the DPoP scheme and a proof
// of that key for this request (RFC 9449 §7), never as a bearer token; an
// unbound one with the Bearer scheme, unless the school requires DPoP.
// When the school asks for nonces and the client's is not the current
// one, w gets the current one (DPoP-Nonce) with the answer.
func (g *Guard) Check(w http.ResponseWriter, r *http.Request, req Requirement) (*Token, *Challenge) {
	d := g.DPoP
	scheme, raw, err := credential(r, d.On())
	switch {
	case errors.Is(err, errSeveral), errors.Is(err, errTokenInURL):
		return nil, g.refuse(http.StatusBadRequest, "invalid_request", err.Error(), "")
	case err != nil:
		return nil, g.refuse(http.StatusUnauthorized, "invalid_token", err.Error(), "")
	}
	tok, err := g.Lookup.LookupAccessToken(r.Context(), raw)
	switch {
	case errors.Is(err, ErrInvalidToken):
		return nil, g.refuse(http.StatusUnauthorized, "invalid_token", errTokenNotFound.Error(), scheme)
	case err != nil:
		return nil, Unavailable()
	}
	if !boundTo(tok, g.Origin) {
		return nil, g.refused(tok, g.refuse(http.StatusUnauthorized, "invalid_token",
			"the access token was issued for a different origin; request one for "+g.Origin, scheme))
	}
	if ch := g.checkBinding(w, r, scheme, raw, tok); ch != nil {
		return nil, g.refused(tok, ch)
	}
	if ch := g.Authorize(tok, req); ch != nil {
		return nil, ch
	}
	return tok, nil
}

// Authorize is Authorize for a token this guard accepted: the challenge
// carries the school's DPoP challenge too, in the scheme the token came
// with (DPoP for a bound token), and no Bearer challenge where the school
// takes no bearer token. The MCP step-up answers with it, so that its 403
// names the same schemes as the Account API's. Refused is told of it.
func (g *Guard) Authorize(tok *Token, req Requirement) *Challenge {
	ch := Authorize(tok, req)
	if ch != nil {
		scheme := SchemeBearer
		if tok.JKT != "" {
			scheme = SchemeDPoP
		}
		g.decorate(ch, scheme)
		g.refused(tok, ch)
	}
	return ch
}

// refused tells Refused of a refusal of tok, and returns it.
func (g *Guard) refused(tok *Token, ch *Challenge) *Challenge {
	if g.Refused != nil {
		g.Refused(tok, ch)
	}
	return ch
}

// checkBinding holds the token to its scheme: a bound token to a proof
// of its key, an unbound one to the school's mode.
func (g *Guard) checkBinding(w http.ResponseWriter, r *http.Request, scheme, raw string, tok *Token) *Challenge {
	d := g.DPoP
	if scheme == SchemeBearer {
		switch {
		case tok.JKT != "":
			return g.refuse(http.StatusUnauthorized, "invalid_token",
				"this access token is bound to a DPoP key: send it with the DPoP scheme and a proof (RFC 9449)", scheme)
		case d.Mode() == DPoPRequired:
			return g.refuse(http.StatusUnauthorized, "invalid_token",
				"this school accepts DPoP-bound access tokens only (RFC 9449); request one with a DPoP proof", SchemeDPoP)
		}
		return nil
	}
	if tok.JKT == "" {
		return g.refuse(http.StatusUnauthorized, "invalid_token",
			"this access token is not bound to a DPoP key: send it with the Bearer scheme", scheme)
	}
	p, perr := d.Proof(r, ProofTarget{Method: r.Method, Origin: g.Origin, Path: r.URL.EscapedPath(), AccessToken: raw})
	switch {
	case perr != nil:
		return g.proofRefusal(perr)
	case p == nil:
		return g.refuse(http.StatusUnauthorized, ErrInvalidDPoPProof, errNoProof.Error(), scheme)
	case p.JKT != tok.JKT:
		return g.refuse(http.StatusUnauthorized, "invalid_token",
			"this access token is bound to another DPoP key than the proof's", scheme)
	}
	if n := d.NonceFor(p); n != "" && w != nil {
		w.Header().Set("DPoP-Nonce", n)
	}
	return nil
}

// proofRefusal answers a refused proof: 401 with the DPoP challenge's
// error, and the nonce to retry with after use_dpop_nonce.
func (g *Guard) proofRefusal(perr *ProofError) *Challenge {
	if perr.Code == ErrUnavailable {
		ch := Unavailable()
		ch.Description = perr.Reason
		return ch
	}
	ch := g.refuse(http.StatusUnauthorized, perr.Code, perr.Reason, SchemeDPoP)
	if perr.Code == ErrUseDPoPNonce {
		ch.Nonce = g.DPoP.CurrentNonce()
	}
	return ch
}

// refuse makes a challenge whose error goes in the challenge of scheme
// ("" is the scheme clients are expected to use first).
func (g *Guard) refuse(status int, code, desc, scheme string) *Challenge {
	ch := &Challenge{Status: status, Error: code, Description: desc}
	g.decorate(ch, scheme)
	return ch
}

// decorate adds the school's DPoP challenge to ch.
func (g *Guard) decorate(ch *Challenge, scheme string) {
	switch g.DPoP.Mode() {
	case DPoPOff:
		return
	case DPoPRequired:
		ch.NoBearer = true
	}
	ch.DPoP = true
	if scheme != "" {
		ch.Scheme = scheme
	}
}

// Check authenticates a request with bearer tokens only: Guard.Check for
// a school without DPoP.
func Check(ctx context.Context, lookup Lookup, r *http.Request, req Requirement, origin string) (*Token, *Challenge) {
	if ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	g := Guard{Lookup: lookup, Origin: origin}
	return g.Check(nil, r, req)
}

// Authorize applies a requirement to a validated token. A challenge names
// every scope the requirement needs, not only the one missing: a client
// that authorizes again for the challenge's scope must not lose the
// others, and one challenge is enough for the whole operation. A token
// bound to a DPoP key is refused in the DPoP challenge, the scheme it
// came with.
func Authorize(tok *Token, req Requirement) *Challenge {
	scope := strings.Join(req.Scopes, " ")
	var ch *Challenge
	if req.Audience != "" && tok.Audience != req.Audience {
		ch = &Challenge{Status: http.StatusForbidden, Error: "insufficient_scope", Scope: scope,
			Description: "this operation needs a " + req.Audience + " token; this one was issued to a " + tok.Audience + " client"}
	}
	for _, s := range req.Scopes {
		if ch == nil && !tok.HasScope(s) {
			ch = &Challenge{Status: http.StatusForbidden, Error: "insufficient_scope", Scope: scope,
				Description: "the access token lacks the scope " + s}
		}
	}
	if ch != nil && tok.JKT != "" {
		ch.Scheme, ch.DPoP = SchemeDPoP, true
	}
	return ch
}

// boundTo checks the origin binding: the token must come from this
// site's issuer and name this site as its resource.
func boundTo(tok *Token, origin string) bool {
	// Tokens carry the issuer's own spelling, so plain equality settles
	// the usual case without parsing URLs on every request.
	if tok.Issuer != origin && !SameOrigin(tok.Issuer, origin) {
		return false
	}
	if tok.Resource == "" {
		return tok.Audience != AudienceMember
	}
	return tok.Resource == origin || SameOrigin(tok.Resource, origin)
}
