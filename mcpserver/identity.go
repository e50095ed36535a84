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

type identityKey struct{}

// WithIdentity returns a context carrying the member's validated token. A
// nil token leaves the request anonymous.
func WithIdentity(ctx context.Context, tok *policy.Token) context.Context {
	return context.WithValue(ctx, identityKey{}, tok)
}

// IdentityFrom returns the validated token of the member a request acts
// for, or nil when it is anonymous.
func IdentityFrom(ctx context.Context) *policy.Token {
	tok, _ := ctx.Value(identityKey{}).(*policy.Token)
	return tok
}
