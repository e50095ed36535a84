package policy

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

// Check authenticates a request to a protected resource at origin and
// applies req. It returns the token, or the challenge to send. A missing
// token is 401 invalid_token too: that is the code promised for
// /account/graphql without a token.
func Check(ctx context.Context, lookup Lookup, r *http.Request, req Requirement, origin string) (*Token, *Challenge) {
	raw, err := BearerToken(r)
	switch {
	case errors.Is(err, errSeveral), errors.Is(err, errTokenInURL):
		return nil, &Challenge{Status: http.StatusBadRequest, Error: "invalid_request", Description: err.Error()}
	case err != nil:
		return nil, invalidToken(err.Error())
	}
	tok, err := lookup.LookupAccessToken(ctx, raw)
	switch {
	case errors.Is(err, ErrInvalidToken):
		return nil, invalidToken(errTokenNotFound.Error())
	case err != nil:
		return nil, Unavailable()
	}
	if !boundTo(tok, origin) {
		return nil, invalidToken("the access token was issued for a different origin; request one for " + origin)
	}
	return tok, Authorize(tok, req)
}

// Authorize applies a requirement to a validated token. A challenge names
// every scope the requirement needs, not only the one missing: a client
// that authorizes again for the challenge's scope must not lose the
// others, and one challenge is enough for the whole operation.
func Authorize(tok *Token, req Requirement) *Challenge {
	scope := strings.Join(req.Scopes, " ")
	if req.Audience != "" && tok.Audience != req.Audience {
		return &Challenge{Status: http.StatusForbidden, Error: "insufficient_scope", Scope: scope,
			Description: "this operation needs a " + req.Audience + " token; this one was issued to a " + tok.Audience + " client"}
	}
	for _, s := range req.Scopes {
		if !tok.HasScope(s) {
			return &Challenge{Status: http.StatusForbidden, Error: "insufficient_scope", Scope: scope,
				Description: "the access token lacks the scope " + s}
		}
	}
	return nil
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

func invalidToken(desc string) *Challenge {
	return &Challenge{Status: http.StatusUnauthorized, Error: "invalid_token", Description: desc}
}
