package authserver

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// Grant ids sort as their creation times do, and ids of one instant
// still differ.
func TestGrantIDsSortByTime(t *testing.T) {
	base := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var ids []string
	seen := map[string]bool{}
	for i := range 200 {
		// Two grants per microsecond, and times far apart (a carry
		// through every hex digit).
		at := base.Add(time.Duration(i/2) * time.Microsecond)
		if i >= 100 {
			at = base.Add(time.Duration(i) * 1000 * time.Hour)
		}
		id := newGrantID(at)
		if seen[id] || len(id) != 38 {
			t.Fatalf("id %q: repeated or not 38 characters", id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	if !slices.IsSortedFunc(ids, func(a, b string) int { return compareTimePart(a, b) }) {
		t.Errorf("ids do not sort by creation time: %v", ids[:6])
	}
}

// compareTimePart compares the time parts of two grant ids: the random
// part of ids of one microsecond may sort either way.
func compareTimePart(a, b string) int {
	switch {
	case a[:16] < b[:16]:
		return -1
	case a[:16] > b[:16]:
		return 1
	}
	return 0
}

// Codes and tokens carry their issue time, and the key a store keeps
// them under starts with it; anything else is keyed by its hash alone.
func TestTokenKeys(t *testing.T) {
	at := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	timed := newTimedToken(prefixAccess, at)
	old := prefixAccess + randomString()
	tests := []struct {
		name, raw, want string
	}{
		{"timed", timed, timed[len(prefixAccess):len(prefixAccess)+16] + hashToken(timed)},
		{"issued before tokens carried a time", old, hashToken(old)},
		{"time not lowercase hex", prefixAccess + "18EAA440DFCA4000" + randomString(), ""},
		{"a character short", timed[:len(timed)-1], ""},
		{"a character long", timed + "A", ""},
		{"no prefix", timed[len(prefixAccess):], ""},
		{"empty", "", hashToken("")},
		{"longer than the buffer it is hashed from", strings.Repeat("x", 300), ""},
		{"as long as that buffer", strings.Repeat("x", 256), ""},
	}
	for _, tt := range tests {
		want := tt.want
		if want == "" {
			want = hashToken(tt.raw)
		}
		if got := tokenKey(tt.raw); got != want {
			t.Errorf("%s: tokenKey(%q) = %q, want %q", tt.name, tt.raw, got, want)
		}
	}
	if len(timed) != len(prefixAccess)+timedLen {
		t.Errorf("timed token %q: %d characters", timed, len(timed))
	}
	if want := fmt.Sprintf("%016x", at.UnixMicro()); timed[len(prefixAccess):len(prefixAccess)+16] != want {
		t.Errorf("timed token %q does not start with its issue time %s", timed, want)
	}
	if r, err := base64.RawURLEncoding.DecodeString(timed[len(prefixAccess)+16:]); err != nil || len(r) != 32 {
		t.Errorf("timed token %q: random part %d bytes, %v", timed, len(r), err)
	}
	// Keys sort as the issue times do, across a carry of every digit.
	var keys []string
	for i := range 100 {
		keys = append(keys, tokenKey(newTimedToken(prefixRefresh, at.Add(time.Duration(i*i*i)*time.Hour))))
	}
	if !slices.IsSortedFunc(keys, compareTimePart) {
		t.Errorf("keys do not sort by issue time: %v", keys[:4])
	}
}

// Tokens and codes issued before they carried their issue time are
// stored under their hash alone, and keep working: a code is redeemed,
// an access token validated and introspected, a refresh token rotated
// (and its reuse detected).
func TestUntimedTokensKeepWorking(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	now := f.clock.Now()
	code := prefixCode + randomString()
	access, refresh := prefixAccess+randomString(), prefixRefresh+randomString()
	scopes := []string{"openid", "account:read"}
	err := f.store.PutCode(ctx, hashToken(code), &store.Code{Request: store.AuthRequest{ClientID: memberClient,
		Scopes: scopes, Audience: store.AudienceMember, Resource: issuer},
		Identity: store.Identity{Subject: "student"}, AuthTime: now, ExpiresAt: now.Add(DefaultCodeTTL)})
	if err != nil {
		t.Fatal(err)
	}
	err = f.store.RedeemCode(ctx, tokenKey(code), func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
		g := &store.Grant{ID: newGrantID(now), ClientID: memberClient, Audience: store.AudienceMember,
			Scopes: scopes, Resource: issuer, Identity: c.Identity, AuthTime: now, CreatedAt: now}
		return g, []store.IssuedToken{
			{Hash: hashToken(access), Token: &store.Token{Kind: store.TokenAccess, GrantID: g.ID, ClientID: memberClient,
				Scopes: scopes, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}},
			{Hash: hashToken(refresh), Token: &store.Token{Kind: store.TokenRefresh, GrantID: g.ID, ClientID: memberClient,
				Scopes: scopes, IssuedAt: now, ExpiresAt: now.Add(24 * time.Hour)}},
		}, nil
	})
	if err != nil {
		t.Fatalf("redeeming an untimed code: %v", err)
	}
	if tok, err := f.srv.LookupAccessToken(ctx, access); err != nil || tok.Subject != "student" {
		t.Fatalf("untimed access token: %v %v", tok, err)
	}
	if m := bcpIntrospect(f, access, memberClient); m["active"] != true {
		t.Errorf("introspecting an untimed token: %v", m)
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {memberClient}}
	status, m := f.token(form)
	if status != 200 {
		t.Fatalf("refreshing with an untimed token: %d %v", status, m)
	}
	if _, ok := issueTime(m["refresh_token"].(string)); !ok {
		t.Errorf("the new refresh token %q carries no issue time", m["refresh_token"])
	}
	f.clock.Advance(time.Hour)
	if status, m := f.token(form); status != 400 || m["error"] != "invalid_grant" {
		t.Errorf("reusing the untimed refresh token: %d %v", status, m)
	}
}
