package schooltest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// HashToken is how the authorization server keeps a secret, a code or a
// token: its SHA-256, in hex.
func HashToken(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// MemberToken stores what a code exchange of the member client would for
// the student at origin (a grant named grantID and an access token of an
// hour, bound to the DPoP key of thumbprint jkt unless it is "") and
// returns the token. The token is the grant's: one grantID, one token.
func MemberToken(tb testing.TB, st store.Store, origin, grantID, jkt string) string {
	tb.Helper()
	sum := sha256.Sum256([]byte(grantID))
	raw := "sgat_" + base64.RawURLEncoding.EncodeToString(sum[:])
	code := HashToken("code of " + grantID)
	now := time.Now()
	ctx := context.Background()
	if err := st.PutCode(ctx, code, &store.Code{ExpiresAt: now.Add(time.Minute)}); err != nil {
		tb.Fatal(err)
	}
	err := st.RedeemCode(ctx, code, func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
		g := &store.Grant{ID: grantID, ClientID: MemberClient, Audience: store.AudienceMember,
			Scopes: []string{"openid", "account:read"}, Resource: origin, CreatedAt: now, Identity: People["student"]}
		return g, []store.IssuedToken{{Hash: HashToken(raw), Token: &store.Token{Kind: store.TokenAccess,
			GrantID: g.ID, ClientID: g.ClientID, Scopes: g.Scopes, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
			JKT: jkt}}}, nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}
