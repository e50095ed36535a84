package mcpserver

import (
	"context"

	"github.com/schoolgate/schoolgate/policy"
)

// The member a request acts for is the access token the gateway validated
// for it: the gateway puts it into the request context, and the member
// tools hand it back with each Account API call, so that the identity
// headers and the identity assertion that call carries are the validated
// token's own. The MCP server never sees the raw token.
//
// The gateway puts an operator's validated token there too: it acts for
// no member, so the tools see it as anonymous, but the edge answers its
// call of a member tool as the Account API answers that token (403
// insufficient_scope), not with sign-in directions.

type identityKey struct{}

// WithIdentity returns a context carrying the caller's validated token,
// of either audience. A nil token leaves the request anonymous.
func WithIdentity(ctx context.Context, tok *policy.Token) context.Context {
	return context.WithValue(ctx, identityKey{}, tok)
}

// IdentityFrom returns the validated token of the member a request acts
// for, or nil when it is anonymous or its token is not a member's.
func IdentityFrom(ctx context.Context) *policy.Token {
	if tok := callerFrom(ctx); tok != nil && tok.Audience == policy.AudienceMember {
		return tok
	}
	return nil
}

// callerFrom returns the validated token the request came with, whatever
// its audience, or nil.
func callerFrom(ctx context.Context) *policy.Token {
	tok, _ := ctx.Value(identityKey{}).(*policy.Token)
	return tok
}
