package policy

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Audiences of a token.
const (
	AudienceMember   = "member"
	AudienceOperator = "operator"
)

// Token is what a validated access token stands for. The protected
// resources and introspection read the same value, so what is enforced is
// what is reported.
type Token struct {
	Subject   string
	ClientID  string
	Audience  string
	Scopes    []string
	Resource  string
	Issuer    string
	IssuedAt  time.Time
	ExpiresAt time.Time
	Email     string
	Name      string
	OrgID     string
	Roles     []string
	// JKT is the thumbprint of the DPoP key the token is bound to (RFC
	// 9449 §6); empty for a bearer token.
	JKT string

	// assertion caches the identity assertion signed for this token
	// (assertion.go); a Token must therefore not be copied.
	assertion assertionSlot
}

// HasScope reports whether the token carries scope.
func (t *Token) HasScope(scope string) bool { return slices.Contains(t.Scopes, scope) }

// ErrInvalidToken is returned by a Lookup for unknown, expired, revoked
// and malformed tokens; any other error is a failure of the lookup itself.
var ErrInvalidToken = errors.New("invalid token")

// Lookup validates a raw access token.
type Lookup interface {
	LookupAccessToken(ctx context.Context, raw string) (*Token, error)
}

// Reasons BearerToken refuses a request.
var (
	errNoToken       = errors.New("a bearer token is required")
	errMalformed     = errors.New("the Authorization header is not a well-formed Bearer credential")
	errSeveral       = errors.New("send exactly one Authorization header")
	errTokenInURL    = errors.New("access tokens are accepted in the Authorization header only, never in the URL")
	errTokenNotFound = errors.New("the access token is invalid, expired or revoked")
)

// BearerToken reads the RFC 6750 §2.1 credential. Tokens in the query or
// the body are not accepted: URLs end up in logs and Referer headers.
func BearerToken(r *http.Request) (string, error) {
	_, tok, err := credential(r, false)
	return tok, err
}

// credential reads the Authorization header's scheme and token: Bearer,
// or, when dpop, DPoP (RFC 9449 §7.1), whose token is the same token68.
func credential(r *http.Request, dpop bool) (scheme, tok string, err error) {
	// Most requests have no query: parsing it would allocate a map on
	// every one of them to find nothing.
	if r.URL != nil && r.URL.RawQuery != "" && r.URL.Query().Has("access_token") {
		return "", "", errTokenInURL
	}
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return "", "", errNoToken
	case 1:
	default:
		return "", "", errSeveral
	}
	scheme, tok, ok := strings.Cut(values[0], " ")
	switch {
	case !ok:
		return "", "", errMalformed
	case strings.EqualFold(scheme, SchemeBearer):
		scheme = SchemeBearer
	case dpop && strings.EqualFold(scheme, SchemeDPoP):
		scheme = SchemeDPoP
	default:
		return "", "", errMalformed
	}
	tok = strings.TrimLeft(tok, " ")
	if !isToken68(tok) {
		return "", "", errMalformed
	}
	return scheme, tok, nil
}

// isToken68 checks the b64token syntax of RFC 6750 §2.1.
func isToken68(s string) bool {
	if s == "" || len(s) > 4096 {
		return false
	}
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~', c == '+', c == '/':
		default:
			return false
		}
	}
	return true
}
