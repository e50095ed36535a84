package policy

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/dpopclient"
)

// guardFixture is a school's protected resource with a bound token
// ("sg_at_member", bound to esKey) and a bearer one ("sg_at_bearer").
func guardFixture(mode DPoPMode, nonces *Nonces) *Guard {
	exp := dpopNow.Add(time.Hour)
	tok := func(jkt string) *Token {
		return &Token{Subject: "m1", Audience: AudienceMember, Scopes: []string{"openid", "account:read"},
			Resource: origin, Issuer: origin, ExpiresAt: exp, JKT: jkt}
	}
	return &Guard{
		Lookup: fakeLookup{theToken: tok(esKey.JKT), "sg_at_bearer": tok("")},
		Origin: origin,
		DPoP:   NewDPoP(mode, nonces, func() time.Time { return dpopNow }),
	}
}

func guardRequest(auth string, proofs ...string) *http.Request {
	r := httptest.NewRequest("POST", graphql, nil)
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	for _, p := range proofs {
		r.Header.Add("DPoP", p)
	}
	return r
}

var account = Requirement{Audience: AudienceMember, Scopes: []string{"account:read"}}

// A protected resource takes a bound token with the DPoP scheme and a
// proof of its key, and refuses every other combination as RFC 9449 §7
// says, with the error in the challenge of the scheme the client used.
func TestGuardDPoP(t *testing.T) {
	proof := func(change dpopclient.Claims) string { return esKey.Sign(nil, claims(change)) }
	cases := []struct {
		name, auth string
		proofs     []string
		status     int
		code       string
		scheme     string // the challenge with the error
		reason     string
	}{
		{"bound token with its proof", "DPoP " + theToken, []string{proof(nil)}, 200, "", "", ""},
		{"scheme in lower case", "dpop " + theToken, []string{proof(nil)}, 200, "", "", ""},
		{"bearer token as bearer", "Bearer sg_at_bearer", nil, 200, "", "", ""},
		{"bearer token as bearer, a proof beside", "Bearer sg_at_bearer", []string{proof(nil)}, 200, "", "", ""},
		{"bound token as bearer", "Bearer " + theToken, nil, 401, "invalid_token", SchemeBearer, "bound to a DPoP key"},
		{"bound token as bearer with a proof", "Bearer " + theToken, []string{proof(nil)}, 401, "invalid_token", SchemeBearer, "DPoP scheme"},
		{"bearer token with the DPoP scheme", "DPoP sg_at_bearer", []string{esKey.Sign(nil, claims(dpopclient.Claims{"ath": dpopclient.ATH("sg_at_bearer")}))},
			401, "invalid_token", SchemeDPoP, "not bound"},
		{"no proof", "DPoP " + theToken, nil, 401, "invalid_dpop_proof", SchemeDPoP, "DPoP header"},
		{"two proofs", "DPoP " + theToken, []string{proof(nil), proof(nil)}, 401, "invalid_dpop_proof", SchemeDPoP, "exactly one"},
		{"proof by another key", "DPoP " + theToken, []string{otherKey.Sign(nil, claims(nil))}, 401, "invalid_token", SchemeDPoP, "another DPoP key"},
		{"ath of another token", "DPoP " + theToken, []string{proof(dpopclient.Claims{"ath": dpopclient.ATH("sg_at_bearer")})}, 401, "invalid_dpop_proof", SchemeDPoP, "ath"},
		{"proof for another path", "DPoP " + theToken, []string{proof(dpopclient.Claims{"htu": origin + "/mcp"})}, 401, "invalid_dpop_proof", SchemeDPoP, "htu"},
		{"unknown token", "DPoP sg_at_nope", []string{proof(nil)}, 401, "invalid_token", SchemeDPoP, "invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := guardFixture(DPoPAllowed, nil)
			w := httptest.NewRecorder()
			tok, ch := g.Check(w, guardRequest(tc.auth, tc.proofs...), account)
			if tc.status == 200 {
				if ch != nil || tok == nil {
					t.Fatalf("refused: %+v", ch)
				}
				return
			}
			if ch == nil {
				t.Fatalf("accepted, want %d %s", tc.status, tc.code)
			}
			if ch.Status != tc.status || ch.Error != tc.code || !strings.Contains(ch.Description, tc.reason) {
				t.Errorf("%d %s %q, want %d %s naming %q", ch.Status, ch.Error, ch.Description, tc.status, tc.code, tc.reason)
			}
			ch.ResourceMetadata = origin + "/.well-known/oauth-protected-resource"
			ch.Write(w)
			checkChallenges(t, w.Header().Values("WWW-Authenticate"), tc.scheme, tc.code, true)
		})
	}
}

// checkChallenges checks the WWW-Authenticate values: Bearer first (when
// bearer is accepted), then DPoP with algs, both with resource_metadata,
// and the error in the challenge of scheme alone.
func checkChallenges(t *testing.T, values []string, scheme, code string, bearer bool) {
	t.Helper()
	want := 2
	if !bearer {
		want = 1
	}
	if len(values) != want {
		t.Fatalf("WWW-Authenticate %q, want %d challenges", values, want)
	}
	params := map[string]map[string]string{}
	for i, v := range values {
		s := SchemeDPoP
		if bearer && i == 0 {
			s = SchemeBearer
		}
		p, err := ParseSchemeChallenge(s, v)
		if err != nil {
			t.Fatalf("challenge %d %q is not %s: %v", i, v, s, err)
		}
		params[s] = p
		if p["resource_metadata"] == "" {
			t.Errorf("%s challenge without resource_metadata: %q", s, v)
		}
	}
	if got := params[SchemeDPoP]["algs"]; got != strings.Join(DPoPAlgs, " ") {
		t.Errorf("DPoP algs %q", got)
	}
	for s, p := range params {
		if (s == scheme) != (p["error"] != "") || (s == scheme && p["error"] != code) {
			t.Errorf("%s challenge has error %q; the error %s belongs in the %s challenge", s, p["error"], code, scheme)
		}
	}
}

// A school that requires DPoP accepts no bearer token, and says so in a
// DPoP challenge alone; one that has DPoP off knows no DPoP scheme and
// adds no DPoP challenge.
func TestGuardModes(t *testing.T) {
	good := "DPoP " + theToken
	proof := esKey.Sign(nil, claims(nil))
	for _, tc := range []struct {
		mode      DPoPMode
		auth      string
		proofs    []string
		status    int
		challenge []string
	}{
		{DPoPRequired, good, []string{proof}, 200, nil},
		{DPoPRequired, "Bearer sg_at_bearer", nil, 401, []string{SchemeDPoP}},
		{DPoPRequired, "", nil, 401, []string{SchemeDPoP}},
		{DPoPAllowed, "", nil, 401, []string{SchemeBearer, SchemeDPoP}},
		{DPoPOff, "Bearer sg_at_bearer", nil, 200, nil},
		{DPoPOff, good, []string{proof}, 401, []string{SchemeBearer}},
		{DPoPOff, "", nil, 401, []string{SchemeBearer}},
	} {
		t.Run(tc.mode.String()+"/"+tc.auth, func(t *testing.T) {
			g := guardFixture(tc.mode, nil)
			w := httptest.NewRecorder()
			_, ch := g.Check(w, guardRequest(tc.auth, tc.proofs...), account)
			if tc.status == 200 {
				if ch != nil {
					t.Fatalf("refused: %+v", ch)
				}
				return
			}
			if ch == nil || ch.Status != tc.status || ch.Error != "invalid_token" {
				t.Fatalf("got %+v, want %d invalid_token", ch, tc.status)
			}
			ch.Write(w)
			values := w.Header().Values("WWW-Authenticate")
			if len(values) != len(tc.challenge) {
				t.Fatalf("WWW-Authenticate %q, want %v", values, tc.challenge)
			}
			for i, s := range tc.challenge {
				p, err := ParseSchemeChallenge(s, values[i])
				if err != nil {
					t.Fatalf("%q: %v", values[i], err)
				}
				// The error goes where the client is told to go.
				if i == 0 && p["error"] != "invalid_token" {
					t.Errorf("the first challenge %q has no error", values[i])
				}
			}
		})
	}
}

// With nonces, a proof without one is answered use_dpop_nonce with the
// nonce in DPoP-Nonce; a good request with an older nonce gets the
// current one beside its answer.
func TestGuardNonce(t *testing.T) {
	nonces := NewNonces([]byte("0123456789abcdef0123456789abcdef"))
	g := guardFixture(DPoPAllowed, nonces)
	w := httptest.NewRecorder()
	_, ch := g.Check(w, guardRequest("DPoP "+theToken, esKey.Sign(nil, claims(nil))), account)
	if ch == nil || ch.Error != ErrUseDPoPNonce || ch.Nonce != nonces.Current(dpopNow) {
		t.Fatalf("got %+v, want use_dpop_nonce with the current nonce", ch)
	}
	ch.ResourceMetadata = origin + "/.well-known/oauth-protected-resource"
	ch.Write(w)
	if w.Code != 401 || w.Header().Get("DPoP-Nonce") != nonces.Current(dpopNow) {
		t.Errorf("%d, DPoP-Nonce %q", w.Code, w.Header().Get("DPoP-Nonce"))
	}
	checkChallenges(t, w.Header().Values("WWW-Authenticate"), SchemeDPoP, ErrUseDPoPNonce, true)

	older := nonces.Current(dpopNow.Add(-time.Minute))
	w = httptest.NewRecorder()
	if _, ch := g.Check(w, guardRequest("DPoP "+theToken, esKey.Sign(nil, claims(dpopclient.Claims{"nonce": older}))), account); ch != nil {
		t.Fatalf("refused: %+v", ch)
	}
	if got := w.Header().Get("DPoP-Nonce"); got != nonces.Current(dpopNow) {
		t.Errorf("DPoP-Nonce %q beside the answer, want the current nonce", got)
	}
}

// A bound token's missing scope is refused in the DPoP challenge.
func TestAuthorizeBoundToken(t *testing.T) {
	tok := &Token{Audience: AudienceMember, Scopes: []string{"openid"}, JKT: esKey.JKT}
	ch := Authorize(tok, account)
	if ch == nil || ch.Scheme != SchemeDPoP || !ch.DPoP {
		t.Fatalf("got %+v", ch)
	}
	w := httptest.NewRecorder()
	ch.ResourceMetadata = origin + "/.well-known/oauth-protected-resource"
	ch.Write(w)
	checkChallenges(t, w.Header().Values("WWW-Authenticate"), SchemeDPoP, "insufficient_scope", true)
}

// The guard's Authorize, the MCP step-up's challenge, names the schemes
// the school takes as its Check does: the DPoP challenge beside the
// Bearer one where DPoP is allowed, the DPoP one alone where it is
// required, the error in the scheme the token came with.
func TestGuardAuthorize(t *testing.T) {
	for _, c := range []struct {
		mode   DPoPMode
		jkt    string
		scheme string
		bearer bool
		dpop   bool
	}{
		{DPoPOff, "", SchemeBearer, true, false},
		{DPoPAllowed, "", SchemeBearer, true, true},
		{DPoPAllowed, esKey.JKT, SchemeDPoP, true, true},
		{DPoPRequired, esKey.JKT, SchemeDPoP, false, true},
	} {
		g := guardFixture(c.mode, nil)
		tok := &Token{Audience: AudienceMember, Scopes: []string{"openid"}, JKT: c.jkt}
		ch := g.Authorize(tok, account)
		if ch == nil || ch.Status != http.StatusForbidden || ch.Scope != "account:read" {
			t.Fatalf("mode %d, bound %v: %+v", c.mode, c.jkt != "", ch)
		}
		ch.ResourceMetadata = origin + "/.well-known/oauth-protected-resource"
		w := httptest.NewRecorder()
		ch.Write(w)
		values := w.Header().Values("WWW-Authenticate")
		if !c.dpop {
			if len(values) != 1 || !strings.HasPrefix(values[0], "Bearer ") || !strings.Contains(values[0], `error="insufficient_scope"`) {
				t.Errorf("dpop off: %q, want one Bearer challenge", values)
			}
			continue
		}
		checkChallenges(t, values, c.scheme, "insufficient_scope", c.bearer)
	}
	tok := &Token{Audience: AudienceMember, Scopes: []string{"openid", "account:read"}}
	if ch := guardFixture(DPoPRequired, nil).Authorize(tok, account); ch != nil {
		t.Errorf("a token with the scope: %+v", ch)
	}
}

// Browser clients may send the DPoP header and read DPoP-Nonce.
func TestCORSAllowsDPoP(t *testing.T) {
	h := http.Header{}
	AllowCORS(h, "GET, POST")
	if !strings.Contains(h.Get("Access-Control-Allow-Headers"), "DPoP") ||
		!strings.Contains(h.Get("Access-Control-Expose-Headers"), "DPoP-Nonce") {
		t.Errorf("CORS headers %v", h)
	}
}

// AllowCORS sets exactly its headers, replacing what was there, and a
// header added to afterwards changes no other.
func TestAllowCORSHeaders(t *testing.T) {
	for _, methods := range []string{"", "GET, POST"} {
		h := http.Header{"Access-Control-Allow-Origin": {"https://old.example"}}
		AllowCORS(h, methods)
		want := http.Header{"Access-Control-Allow-Origin": {"*"},
			"Access-Control-Expose-Headers": {"WWW-Authenticate, Retry-After, DPoP-Nonce"}}
		if methods != "" {
			want["Access-Control-Allow-Methods"] = []string{methods}
			want["Access-Control-Allow-Headers"] = []string{"Authorization, Content-Type, Mcp-Protocol-Version, DPoP"}
			want["Access-Control-Max-Age"] = []string{"600"}
		}
		if !reflect.DeepEqual(h, want) {
			t.Fatalf("methods %q: %v, want %v", methods, h, want)
		}
		for k := range want {
			h.Add(k, "added")
		}
		for k, v := range want {
			if got := h.Values(k); len(got) != 2 || got[0] != v[0] || got[1] != "added" {
				t.Errorf("methods %q: %s is %q after adding to every header", methods, k, got)
			}
		}
	}
}
