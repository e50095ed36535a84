package authserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// oddStrings are strings encoding/json escapes, or would if it could
// (invalid UTF-8), beside plain ones.
var oddStrings = []string{
	"", "plain", "sgat_0123456789abcdef-_AZaz09", "openid profile email",
	`quote " and \ backslash`, "<script>&amp;</script>", "tab\there\nnewline\r\x00\x1f",
	"Zoë Ünïcödé 学生", "\u2028line\u2029para", "bad \xff utf-8 \xc3", "del \x7f",
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	for _, s := range oddStrings {
		resps := []tokenResponse{
			{AccessToken: s, TokenType: "Bearer", ExpiresIn: 3600, Scope: s},
			{AccessToken: "a", TokenType: s, ExpiresIn: -1, Scope: "", RefreshToken: s, IDToken: s},
			{AccessToken: "a", TokenType: "DPoP", ExpiresIn: 0, Scope: "openid", IDToken: "x.y.z"},
		}
		for _, r := range resps {
			want, err := json.Marshal(&r)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.appendJSON(nil); !bytes.Equal(got, want) {
				t.Errorf("token response of %q:\n got %s\nwant %s", s, got, want)
			}
		}
		claimSets := []idTokenClaims{
			{Issuer: s, userClaims: userClaims{Subject: s, Email: s, Name: s, OrgID: s, Roles: []string{s, "student"}},
				Audience: s, IssuedAt: 1, Expires: 2, AuthTime: 3, Nonce: s},
			{Issuer: "https://school.example", userClaims: userClaims{Subject: s, Roles: []string{}}, Audience: "app"},
			{Issuer: "https://school.example", userClaims: userClaims{Subject: "m", Roles: nil}, Audience: s,
				IssuedAt: -5, Expires: 1 << 40},
		}
		for _, c := range claimSets {
			want, err := json.Marshal(&c)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.appendJSON(nil); !bytes.Equal(got, want) {
				t.Errorf("ID token claims of %q:\n got %s\nwant %s", s, got, want)
			}
		}
	}
}

// TestWriteTokenResponseMatchesWriteJSON: the token endpoint's answer is
// the bytes and headers writeJSON gives, final newline included.
func TestWriteTokenResponseMatchesWriteJSON(t *testing.T) {
	resp := &tokenResponse{AccessToken: "sgat_a", TokenType: "Bearer", ExpiresIn: 3600, Scope: "openid <b>",
		RefreshToken: "sgrt_b", IDToken: "h.p.s"}
	want, got := httptest.NewRecorder(), httptest.NewRecorder()
	writeJSON(want, 200, resp)
	writeTokenResponse(got, resp)
	if got.Code != want.Code || got.Body.String() != want.Body.String() {
		t.Fatalf("got %d %q, want %d %q", got.Code, got.Body, want.Code, want.Body)
	}
	for k, v := range want.Header() {
		if g := got.Header()[k]; len(g) != len(v) || g[0] != v[0] {
			t.Errorf("header %s: got %v, want %v", k, g, v)
		}
	}
	if len(got.Header()) != len(want.Header()) {
		t.Errorf("headers: got %v, want %v", got.Header(), want.Header())
	}
}

// BenchmarkTokenResponseJSON compares the token endpoint's answer written
// by encoding/json (writeJSON) and by hand (writeTokenResponse), and an
// ID token's claims marshalled and appended.
func BenchmarkTokenResponseJSON(b *testing.B) {
	resp := &tokenResponse{AccessToken: "sgat_" + randomString(), TokenType: "Bearer", ExpiresIn: 3600,
		Scope: "openid profile email account:read", RefreshToken: "sgrt_" + randomString(),
		IDToken: randomString() + "." + randomString() + randomString() + randomString() + "." + randomString()}
	w := &discardWriter{h: http.Header{}}
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			clear(w.h)
			writeJSON(w, http.StatusOK, resp)
		}
	})
	b.Run("by-hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			clear(w.h)
			writeTokenResponse(w, resp)
		}
	})
	c := &idTokenClaims{Issuer: issuer, userClaims: userClaims{Subject: "member-1", Email: "student@demo.school",
		Name: "Sam Student", OrgID: "demo", Roles: []string{"student"}}, Audience: memberClient,
		IssuedAt: 1_800_000_000, Expires: 1_800_000_600, AuthTime: 1_799_999_990, Nonce: "n-456"}
	b.Run("claims-encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("claims-by-hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf := getJSONBuffer()
			*buf = c.appendJSON(*buf)
			putJSONBuffer(buf)
		}
	})
}
