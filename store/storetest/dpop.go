package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// The DPoP bindings of RFC 9449 are stored fields like any other: a
// token's key thumbprint, a code's dpop_jkt, a client's
// dpop_bound_access_tokens. Each reads back as stored.
func testDPoPBindings(t *testing.T, s store.Store) {
	ctx := context.Background()
	client := &store.Client{ID: "dpop-app", Name: "DPoP", Kind: store.KindApp, IssuedAt: epoch, DPoPBound: true}
	if err := s.PutClient(ctx, client); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetClient(ctx, client.ID); err != nil || !got.DPoPBound {
		t.Fatalf("GetClient = %+v, %v; want DPoPBound kept", got, err)
	}
	code := unique("code")
	c := newCode(client.ID)
	c.Request.DPoPJKT = "code-key"
	if err := s.PutCode(ctx, code, c); err != nil {
		t.Fatal(err)
	}
	var seen string
	var p pair
	err := s.RedeemCode(ctx, code, func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
		seen = c.Request.DPoPJKT
		g := newGrant(c)
		var toks []store.IssuedToken
		p, toks = newTokens(g)
		toks[0].Token.JKT, toks[1].Token.JKT = "access-key", "refresh-key"
		return g, toks, nil
	})
	if err != nil || seen != "code-key" {
		t.Fatalf("RedeemCode = %v; the code's dpop_jkt read %q, want code-key", err, seen)
	}
	for hash, want := range map[string]string{p.access: "access-key", p.refresh: "refresh-key"} {
		if tok, _, err := s.GetToken(ctx, hash); err != nil || tok.JKT != want {
			t.Errorf("GetToken = %+v, %v; want JKT %q", tok, err, want)
		}
	}
}

// A refresh token bound to a DPoP key rotates only for its key's holder.
// Anyone else, with another key or none, gets ErrWrongKey and changes
// nothing: not the token's rotation, not its grant, not even once the
// token has been rotated, when its holder's second use would be a replay.
func testRefreshHolder(t *testing.T, s store.Store) {
	ctx := context.Background()
	code := unique("code")
	if err := s.PutCode(ctx, code, newCode("app-1")); err != nil {
		t.Fatal(err)
	}
	var p pair
	err := s.RedeemCode(ctx, code, func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
		g := newGrant(c)
		var toks []store.IssuedToken
		p, toks = newTokens(g)
		toks[1].Token.JKT = "holder"
		return g, toks, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rotate := func(holder string, at time.Time) (int, error) {
		calls := 0
		err := s.RotateRefresh(ctx, p.refresh, holder, at, grace, func(_ *store.Token, g *store.Grant) ([]store.IssuedToken, error) {
			calls++
			_, toks := newTokens(g)
			return toks, nil
		})
		return calls, err
	}
	unchanged := func(what string, wantRotated time.Time) {
		t.Helper()
		tok, g, err := s.GetToken(ctx, p.refresh)
		if err != nil || !tok.RotatedAt.Equal(wantRotated) || tok.Revoked || g.Revoked {
			t.Errorf("%s changed the token: %+v, grant revoked %v, %v", what, tok, g != nil && g.Revoked, err)
		}
	}
	for _, holder := range []string{"", "another"} {
		calls, err := rotate(holder, epoch)
		wantErr(t, "rotation by "+holder, err, store.ErrWrongKey)
		if calls != 0 {
			t.Errorf("a rotation by %q called rotate", holder)
		}
		unchanged("a refused rotation", time.Time{})
	}
	if _, err := rotate("holder", epoch); err != nil {
		t.Fatalf("rotation by the key's holder: %v", err)
	}
	late := epoch.Add(grace + time.Second)
	_, err = rotate("another", late)
	wantErr(t, "a late reuse by another key", err, store.ErrWrongKey)
	unchanged("a late reuse by another key", epoch)
	_, err = rotate("holder", late)
	wantErr(t, "a late reuse by the holder", err, store.ErrRefreshReuse)
	if !revoked(t, s, p.refresh) {
		t.Error("the holder's late reuse left the grant valid")
	}
}
