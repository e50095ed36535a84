package mcpserver

import (
	"context"
	"slices"
)

// Identity is the signed-in member a request acts for. The gateway puts it
// into the request context after validating the bearer token; the MCP
// server never sees the token itself.
type Identity struct {
	Subject, Email, Name, OrgID, ClientID string
	Roles, Scopes                         []string
}

// HasScope reports whether the member's token was granted scope.
func (id *Identity) HasScope(scope string) bool {
	return id != nil && slices.Contains(id.Scopes, scope)
}

type identityKey struct{}

// WithIdentity returns a context carrying id. A nil id leaves the request
// anonymous.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the member a request acts for, or nil when it is
// anonymous.
func IdentityFrom(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}
