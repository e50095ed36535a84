package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

func testPendingTakenOnce(t *testing.T, s store.Store) {
	ctx := context.Background()
	p := &store.PendingAuth{ID: "req-1", CSRFHash: "c5", ExpiresAt: epoch.Add(time.Minute),
		Request: store.AuthRequest{ClientID: "app-1", Scopes: []string{"openid"}}}
	if err := s.PutPending(ctx, p); err != nil {
		t.Fatal(err)
	}
	got, err := s.TakePending(ctx, "req-1")
	if err != nil || got.CSRFHash != "c5" || got.Request.ClientID != "app-1" {
		t.Fatalf("TakePending = %+v, %v", got, err)
	}
	_, err = s.TakePending(ctx, "req-1")
	wantErr(t, "second TakePending", err, store.ErrNotFound)
}

func testConsents(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.PutConsent(ctx, "app-1", "ada", &store.Consent{Scopes: []string{"openid"}, GrantedAt: epoch}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutConsent(ctx, "app-1", "ada", &store.Consent{Scopes: []string{"openid", "email"}, GrantedAt: epoch}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetConsent(ctx, "app-1", "ada")
	if err != nil || !slices.Equal(got.Scopes, []string{"openid", "email"}) || !got.GrantedAt.Equal(epoch) {
		t.Fatalf("GetConsent = %+v, %v", got, err)
	}
	for _, c := range [][2]string{{"app-1", "bob"}, {"app-2", "ada"}, {"app-1ada", ""}} {
		_, err := s.GetConsent(ctx, c[0], c[1])
		wantErr(t, "GetConsent("+c[0]+", "+c[1]+")", err, store.ErrNotFound)
	}
}

func testCodeRedeemedOnce(t *testing.T, s store.Store) {
	ctx := context.Background()
	grantID, p := grantOf(t, s, "app-1")
	if revoked(t, s, p.access) || revoked(t, s, p.refresh) {
		t.Fatal("a fresh grant's tokens are revoked")
	}
	// grantOf's code is spent; replay one the same way.
	code := unique("code")
	if err := s.PutCode(ctx, code, newCode("app-1")); err != nil {
		t.Fatal(err)
	}
	issue := func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
		g := newGrant(c)
		grantID = g.ID
		var toks []store.IssuedToken
		p, toks = newTokens(g)
		return g, toks, nil
	}
	if err := s.RedeemCode(ctx, code, issue); err != nil {
		t.Fatal(err)
	}
	calls := 0
	err := s.RedeemCode(ctx, code, func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
		calls++
		return nil, nil, errors.New("a replay must not issue")
	})
	wantErr(t, "replayed code", err, store.ErrCodeReuse)
	if calls != 0 {
		t.Errorf("a replay called issue %d times", calls)
	}
	if !revoked(t, s, p.access) || !revoked(t, s, p.refresh) {
		t.Errorf("a replayed code left grant %s valid", grantID)
	}
}

func testCodeCallbackError(t *testing.T, s store.Store) {
	ctx := context.Background()
	code := unique("code")
	if err := s.PutCode(ctx, code, newCode("app-1")); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("wrong verifier")
	err := s.RedeemCode(ctx, code, func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
		return nil, nil, refused
	})
	if err != refused {
		t.Fatalf("RedeemCode = %v, want the callback's error as is", err)
	}
	// The refused attempt spent nothing: the right verifier still works.
	err = s.RedeemCode(ctx, code, func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
		g := newGrant(c)
		_, toks := newTokens(g)
		return g, toks, nil
	})
	if err != nil {
		t.Fatalf("RedeemCode after a refused attempt: %v", err)
	}
}

func testConcurrentRedeem(t *testing.T, s store.Store) { concurrentRedeem(t, s, s) }

// concurrentRedeem redeems one code from a and b, alternately, at once.
func concurrentRedeem(t *testing.T, a, b store.Store) {
	ctx := context.Background()
	code := unique("code")
	if err := a.PutCode(ctx, code, newCode("app-1")); err != nil {
		t.Fatal(err)
	}
	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			errs[i] = s.RedeemCode(ctx, code, func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
				g := newGrant(c)
				_, toks := newTokens(g)
				return g, toks, nil
			})
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrCodeReuse):
			t.Errorf("concurrent redeem: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent redeems of one code won, want 1", won, n)
	}
}
