package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

const grace = 30 * time.Second

// rotateAt rotates the refresh token at now and returns the new pair.
func rotateAt(s store.Store, hash string, now time.Time) (pair, int, error) {
	var p pair
	calls := 0
	err := s.RotateRefresh(context.Background(), hash, "", now, grace, func(_ *store.Token, g *store.Grant) ([]store.IssuedToken, error) {
		calls++
		var toks []store.IssuedToken
		p, toks = newTokens(g)
		return toks, nil
	})
	return p, calls, err
}

func testRefreshRotation(t *testing.T, s store.Store) {
	ctx := context.Background()
	_, first := grantOf(t, s, "app-1")
	second, _, err := rotateAt(s, first.refresh, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if revoked(t, s, second.access) || revoked(t, s, second.refresh) {
		t.Fatal("the rotated pair is revoked")
	}
	// A client that lost the answer retries within the grace window.
	if _, _, err := rotateAt(s, first.refresh, epoch.Add(grace/2)); err != nil {
		t.Fatalf("rotation within grace: %v", err)
	}
	tok, _, err := s.GetToken(ctx, first.refresh)
	if err != nil || !tok.RotatedAt.Equal(epoch) {
		t.Fatalf("RotatedAt = %v, %v; want the first rotation's %v, set once", tok.RotatedAt, err, epoch)
	}
	_, calls, err := rotateAt(s, first.refresh, epoch.Add(grace+time.Second))
	wantErr(t, "reuse after grace", err, store.ErrRefreshReuse)
	if calls != 0 {
		t.Errorf("a reuse called rotate %d times", calls)
	}
	if !revoked(t, s, second.access) || !revoked(t, s, second.refresh) {
		t.Error("a reused refresh token left its grant valid")
	}
}

func testRefreshCallbackError(t *testing.T, s store.Store) {
	ctx := context.Background()
	_, p := grantOf(t, s, "app-1")
	refused := errors.New("scope widened")
	err := s.RotateRefresh(ctx, p.refresh, "", epoch, grace, func(*store.Token, *store.Grant) ([]store.IssuedToken, error) {
		return nil, refused
	})
	if err != refused {
		t.Fatalf("RotateRefresh = %v, want the callback's error as is", err)
	}
	tok, _, err := s.GetToken(ctx, p.refresh)
	if err != nil || !tok.RotatedAt.IsZero() {
		t.Fatalf("a refused rotation marked the token rotated: %v, %v", tok.RotatedAt, err)
	}
	// Long after, it is still its first rotation.
	if _, _, err := rotateAt(s, p.refresh, epoch.Add(time.Hour)); err != nil {
		t.Fatalf("rotation after a refused one: %v", err)
	}
}

func testConcurrentRotation(t *testing.T, s store.Store) { concurrentRotation(t, s, s) }

// concurrentRotation rotates one refresh token from a and b, alternately,
// at once.
func concurrentRotation(t *testing.T, a, b store.Store) {
	ctx := context.Background()
	s := a
	_, p := grantOf(t, s, "app-1")
	other := func(i int) store.Store {
		if i%2 == 1 {
			return b
		}
		return a
	}
	const n = 16
	pairs := make([]pair, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { pairs[i], _, errs[i] = rotateAt(other(i), p.refresh, epoch) })
	}
	wg.Wait()
	// All within the grace window of the first: every one succeeds and
	// each keeps what it was given.
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent rotation %d: %v", i, err)
		}
		if revoked(t, s, pairs[i].access) || revoked(t, s, pairs[i].refresh) {
			t.Errorf("rotation %d's pair is revoked", i)
		}
	}
	tok, _, err := s.GetToken(ctx, p.refresh)
	if err != nil || !tok.RotatedAt.Equal(epoch) {
		t.Errorf("RotatedAt = %v, %v; want %v", tok.RotatedAt, err, epoch)
	}
	// After the window, concurrent reuses all fail and revoke the grant.
	for i := range n {
		wg.Go(func() { _, _, errs[i] = rotateAt(other(i), p.refresh, epoch.Add(grace+time.Second)) })
	}
	wg.Wait()
	for i, err := range errs {
		wantErr(t, "concurrent reuse", err, store.ErrRefreshReuse)
		if !revoked(t, s, pairs[i].access) {
			t.Errorf("rotation %d's pair survived the reuse", i)
		}
	}
}

func testRevocation(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		revoke func(grantID string, p pair) error
		// wantAccess, wantRefresh: revoked afterwards.
		wantAccess, wantRefresh bool
	}{
		{"access token alone", func(_ string, p pair) error { return s.RevokeToken(ctx, p.access) }, true, false},
		{"refresh token ends its grant", func(_ string, p pair) error { return s.RevokeToken(ctx, p.refresh) }, true, true},
		{"grant", func(id string, _ pair) error { return s.RevokeGrant(ctx, id) }, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			grantID, p := grantOf(t, s, "app-1")
			_, other := grantOf(t, s, "app-1")
			if err := c.revoke(grantID, p); err != nil {
				t.Fatal(err)
			}
			if got := revoked(t, s, p.access); got != c.wantAccess {
				t.Errorf("access revoked = %v, want %v", got, c.wantAccess)
			}
			if got := revoked(t, s, p.refresh); got != c.wantRefresh {
				t.Errorf("refresh revoked = %v, want %v", got, c.wantRefresh)
			}
			if revoked(t, s, other.access) || revoked(t, s, other.refresh) {
				t.Error("another grant was revoked too")
			}
		})
	}
	if err := s.RevokeGrant(ctx, "no-such-grant"); err != nil {
		t.Errorf("RevokeGrant of an unknown grant: %v", err)
	}
}

func testRevokeClientGrants(t *testing.T, s store.Store) {
	ctx := context.Background()
	_, a1 := grantOf(t, s, "app-1")
	_, a2 := grantOf(t, s, "app-1")
	_, b := grantOf(t, s, "app-2")
	n, err := s.RevokeClientGrants(ctx, "app-1")
	if err != nil || n != 2 {
		t.Fatalf("RevokeClientGrants = %d, %v; want 2", n, err)
	}
	for _, p := range []pair{a1, a2} {
		if !revoked(t, s, p.access) || !revoked(t, s, p.refresh) {
			t.Error("a grant of the client survived")
		}
	}
	if revoked(t, s, b.access) {
		t.Error("another client's grant was revoked")
	}
	if n, err := s.RevokeClientGrants(ctx, "app-1"); err != nil || n != 0 {
		t.Errorf("second RevokeClientGrants = %d, %v; want 0: nothing left to revoke", n, err)
	}
}

func testPurgeExpired(t *testing.T, s store.Store) {
	ctx := context.Background()
	cut := epoch.Add(2 * time.Hour)
	grantID, p := grantOf(t, s, "app-1") // access expires before cut, refresh after
	old, fresh := newCode("app-1"), newCode("app-1")
	old.ExpiresAt, fresh.ExpiresAt = cut.Add(-time.Second), cut.Add(time.Second)
	for hash, c := range map[string]*store.Code{"old-code": old, "fresh-code": fresh} {
		if err := s.PutCode(ctx, hash, c); err != nil {
			t.Fatal(err)
		}
	}
	for id, exp := range map[string]time.Time{"old-req": cut.Add(-time.Second), "fresh-req": cut.Add(time.Second)} {
		if err := s.PutPending(ctx, &store.PendingAuth{ID: id, ExpiresAt: exp}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutClient(ctx, &store.Client{ID: "app-1", Kind: store.KindApp}); err != nil {
		t.Fatal(err)
	}
	if err := s.PurgeExpired(ctx, cut); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.GetToken(ctx, p.access)
	wantErr(t, "expired access token", err, store.ErrNotFound)
	if _, g, err := s.GetToken(ctx, p.refresh); err != nil || g.ID != grantID {
		t.Errorf("unexpired refresh token: %v", err)
	}
	_, err = s.TakePending(ctx, "old-req")
	wantErr(t, "expired pending request", err, store.ErrNotFound)
	if _, err := s.TakePending(ctx, "fresh-req"); err != nil {
		t.Errorf("unexpired pending request: %v", err)
	}
	noop := func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
		return nil, nil, errors.New("checked")
	}
	wantErr(t, "expired code", s.RedeemCode(ctx, "old-code", noop), store.ErrNotFound)
	if err := s.RedeemCode(ctx, "fresh-code", noop); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("unexpired code: %v", err)
	}
	if _, err := s.GetClient(ctx, "app-1"); err != nil {
		t.Errorf("a client was purged: %v", err)
	}
}

// testPurgeGrants: a revoked grant and a grant with no token left go with
// the expired records; a live grant stays.
func testPurgeGrants(t *testing.T, s store.Store) {
	ctx := context.Background()
	cut := epoch.Add(30 * time.Hour) // after both tokens of every grant
	_, live := grantOf(t, s, "app-1")
	revokedID, gone := grantOf(t, s, "app-1")
	emptyID, _ := grantOf(t, s, "app-1")
	if err := s.RevokeGrant(ctx, revokedID); err != nil {
		t.Fatal(err)
	}
	// Purge at a time before every expiry: only the revoked grant goes,
	// with its unexpired tokens.
	if err := s.PurgeExpired(ctx, epoch); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{gone.access, gone.refresh} {
		_, _, err := s.GetToken(ctx, h)
		wantErr(t, "token of a revoked grant", err, store.ErrNotFound)
	}
	if revoked(t, s, live.access) {
		t.Error("a live grant was touched")
	}
	// Once every token of a grant has expired, the grant goes too: a later
	// revocation of it finds nothing and is no error.
	if err := s.PurgeExpired(ctx, cut); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.GetToken(ctx, live.refresh)
	wantErr(t, "expired refresh token", err, store.ErrNotFound)
	if err := s.RevokeGrant(ctx, emptyID); err != nil {
		t.Errorf("RevokeGrant of a purged grant: %v", err)
	}
}
