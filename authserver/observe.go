package authserver

// Observer is told what the server does, for metrics. The Caddy adapter
// implements it with Prometheus counters; methods must be cheap and safe
// for concurrent use, as they run on the request path.
type Observer interface {
	// TokenIssued counts a token response by its grant type (one of
	// GrantTypes).
	TokenIssued(grantType string)
	// Refused counts an OAuth error answer by the name of the route that
	// gave it (token, register, revoke, introspect, authorize; other for
	// the pages' areas) and its error code, or "rate_limited".
	Refused(endpoint, code string)
	// Registered counts a dynamic registration by the kind of client it
	// returned (vendor, loopback).
	Registered(kind string)
	// TokenLookup counts access-token validations by whether the cache
	// answered.
	TokenLookup(cached bool)
	// GrantDisconnected counts a grant ended by the person on their
	// applications page (member), by an operator (operator), or by the
	// client revoking its refresh token (client).
	GrantDisconnected(by string)
}

type nopObserver struct{}

func (nopObserver) TokenIssued(string)       {}
func (nopObserver) Refused(string, string)   {}
func (nopObserver) Registered(string)        {}
func (nopObserver) TokenLookup(cached bool)  {}
func (nopObserver) GrantDisconnected(string) {}
