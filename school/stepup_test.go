package school

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// mintToken stores a grant of audience and scopes, named name, with one
// access token, as a code exchange would, and returns the token.
func mintToken(tb testing.TB, st store.Store, name, audience string, scopes ...string) string {
	tb.Helper()
	hash := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	raw := "sgat_" + name + strings.Repeat("x", 43-len(name))
	now := time.Now()
	code := hash("code-" + name)
	if err := st.PutCode(context.Background(), code, &store.Code{ExpiresAt: now.Add(time.Minute)}); err != nil {
		tb.Fatal(err)
	}
	err := st.RedeemCode(context.Background(), code, func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
		g := &store.Grant{ID: "grant-" + name, ClientID: name + "-app", Audience: audience, Scopes: scopes,
			CreatedAt: now, Identity: store.Identity{Subject: name + "-1", Email: name + "@demo.school"}}
		if audience == store.AudienceMember {
			g.Resource = testIssuer
		}
		return g, []store.IssuedToken{{Hash: hash(raw), Token: &store.Token{Kind: store.TokenAccess,
			GrantID: g.ID, ClientID: g.ClientID, Scopes: g.Scopes, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}}}, nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// A valid token that lacks the scope a member tool needs gets, for its
// tools/call at /mcp, the very answer the Account API gives the same
// token: 403 and the same challenge, resource_metadata included, so a
// client steps up from either alike. A token with the scope is served,
// anonymous callers are served as before, and an invalid token is still
// a 401.
func TestMCPScopeChallengeIsTheAccountAPIs(t *testing.T) {
	ts := newTestSite(t)
	noRead := mintToken(t, ts.store, "noread", store.AudienceMember, "openid", "profile")
	operator := mintToken(t, ts.store, "operator", store.AudienceOperator, "openid", "courses:read")
	post := func(path, token, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, testIssuer+path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		return ts.serve(t, r)
	}
	const enrollments = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"my_enrollments","arguments":{}}}`
	metadata := `resource_metadata="` + testIssuer + `/.well-known/oauth-protected-resource"`

	for _, c := range []struct {
		name, token, want string
	}{
		{"member token without account:read", noRead,
			`Bearer error="insufficient_scope", error_description="the access token lacks the scope account:read", scope="account:read", ` + metadata},
		{"operator token", operator,
			`Bearer error="insufficient_scope", error_description="this operation needs a member token; this one was issued to a operator client", scope="account:read", ` + metadata},
	} {
		t.Run(c.name, func(t *testing.T) {
			account := post("/account/graphql", c.token, `{"query":"{ viewer { id } }"}`)
			mcp := post("/mcp", c.token, enrollments)
			if account.Code != http.StatusForbidden || mcp.Code != http.StatusForbidden {
				t.Fatalf("Account API %d, /mcp %d: %s; want 403 from both", account.Code, mcp.Code, mcp.Body)
			}
			if got := mcp.Header().Get("WWW-Authenticate"); got != c.want {
				t.Fatalf("/mcp challenge %q, want %q", got, c.want)
			}
			// Every challenge, the school's DPoP one too, is the Account API's.
			if got, want := mcp.Header().Values("WWW-Authenticate"), account.Header().Values("WWW-Authenticate"); !slices.Equal(got, want) || len(got) != 2 {
				t.Fatalf("/mcp challenges %q\nAccount API %q", got, want)
			}
			if mcp.Body.String() != account.Body.String() {
				t.Errorf("/mcp body %s, the Account API's %s", mcp.Body, account.Body)
			}
			if ts.upstream.header != nil {
				t.Error("a refused call reached the legacy server")
			}
		})
	}

	// With account:read the call is the tool's (the test's upstream is
	// not there, so its answer is a tool error, in a 200).
	if rec := post("/mcp", ts.token, enrollments); rec.Code != http.StatusOK || rec.Header().Get("WWW-Authenticate") != "" {
		t.Errorf("with account:read: %d %q %s", rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body)
	}
	// Anonymous: sign-in directions in a tool result, as before.
	if rec := post("/mcp", "", enrollments); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "needs a signed-in member") {
		t.Errorf("anonymous: %d %s", rec.Code, rec.Body)
	}
	// An invalid token: 401 invalid_token, never served.
	rec := post("/mcp", "sgat_"+strings.Repeat("z", 43), enrollments)
	if ch := rec.Header().Get("WWW-Authenticate"); rec.Code != http.StatusUnauthorized || !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(ch, metadata) {
		t.Errorf("invalid token: %d %q", rec.Code, ch)
	}
}
