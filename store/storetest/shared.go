package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/schoolgate/schoolgate/store"
)

// RunShared checks a store that several gateway instances share: open
// returns two stores of one fresh site, each with its own connections, as
// two instances would hold them. What one decides, the other must see, and
// of two racing decisions exactly one wins.
func RunShared(t *testing.T, open func(t *testing.T) (a, b store.Store)) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, a, b store.Store)
	}{
		{"ConcurrentRedeem", concurrentRedeem},
		{"ConcurrentRotation", concurrentRotation},
		{"OneFirstKey", testOneFirstKey},
		{"OneClientPerRegistration", testOneClientPerRegistration},
		{"ClientCapAcrossInstances", testClientCapAcross},
		{"RevocationSeenByOther", testRevocationSeen},
		{"ErasureSeenByOther", testErasureSeen},
		{"UsageAddedByBoth", testUsageAddedByBoth},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := open(t)
			c.run(t, a, b)
		})
	}
}

// race runs f(i) for i in [0, n), each on a or b by turns, all at once.
func race(n int, a, b store.Store, f func(i int, s store.Store)) {
	var wg sync.WaitGroup
	for i := range n {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() { f(i, s) })
	}
	wg.Wait()
}

// testOneFirstKey: instances starting together store one first key.
func testOneFirstKey(t *testing.T, a, b store.Store) {
	const n = 8
	got := make([][]store.StoredKey, n)
	errs := make([]error, n)
	race(n, a, b, func(i int, s store.Store) {
		k := store.StoredKey{KID: fmt.Sprintf("k%d", i), JWK: []byte(`{"kty":"EC"}`), CreatedAt: epoch, SignFrom: epoch}
		got[i], errs[i] = s.InitKeys(context.Background(), k)
	})
	for i := range n {
		if errs[i] != nil || len(got[i]) != 1 || got[i][0].KID != got[0][0].KID {
			t.Fatalf("start %d: InitKeys = %v, %v; want the one key %v", i, got[i], errs[i], got[0])
		}
	}
	if keys, err := b.LoadKeys(context.Background()); err != nil || len(keys) != 1 {
		t.Errorf("LoadKeys = %v, %v; want one key", keys, err)
	}
}

// testOneClientPerRegistration: identical registrations at once make one
// client.
func testOneClientPerRegistration(t *testing.T, a, b store.Store) {
	const n = 8
	ids := make([]string, n)
	race(n, a, b, func(i int, s store.Store) {
		c := &store.Client{ID: fmt.Sprintf("cli-%d", i), Kind: store.KindLoopback, RegistrationKey: "same", IssuedAt: epoch}
		got, _, err := s.CreateClient(context.Background(), c, 100)
		if err != nil {
			t.Errorf("registration %d: %v", i, err)
			return
		}
		ids[i] = got.ID
	})
	for i := range n {
		if ids[i] != ids[0] {
			t.Fatalf("registrations got clients %v, want one", ids)
		}
	}
	if n, _ := a.CountClientsByKind(context.Background(), store.KindLoopback); n != 1 {
		t.Errorf("%d clients stored, want 1", n)
	}
}

// testClientCapAcross: the per-site cap holds when instances register at
// once.
func testClientCapAcross(t *testing.T, a, b store.Store) {
	const n, limit = 12, 5
	var mu sync.Mutex
	made := 0
	race(n, a, b, func(i int, s store.Store) {
		c := &store.Client{ID: fmt.Sprintf("cli-%d", i), Kind: store.KindLoopback, IssuedAt: epoch}
		_, existing, err := s.CreateClient(context.Background(), c, limit)
		switch {
		case errors.Is(err, store.ErrClientLimit):
		case err != nil:
			t.Errorf("registration %d: %v", i, err)
		case !existing:
			mu.Lock()
			made++
			mu.Unlock()
		}
	})
	stored, _ := a.CountClientsByKind(context.Background(), store.KindLoopback)
	if made != limit || stored != limit {
		t.Errorf("%d created, %d stored; want %d", made, stored, limit)
	}
}

// testRevocationSeen: a revocation at one instance is read at the other.
func testRevocationSeen(t *testing.T, a, b store.Store) {
	ctx := context.Background()
	_, p := grantOf(t, a, "app-1")
	if revoked(t, b, p.access) {
		t.Fatal("a fresh token reads as revoked")
	}
	if err := a.RevokeToken(ctx, p.refresh); err != nil {
		t.Fatal(err)
	}
	if !revoked(t, b, p.access) {
		t.Error("the other instance still reads the grant as live")
	}
	// And a refresh at b of the revoked grant's token is refused by the
	// caller, which reads the grant: the store reports it revoked.
	tok, g, err := b.GetToken(ctx, p.refresh)
	if err != nil || !(tok.Revoked || g.Revoked) {
		t.Errorf("refresh token at b = %+v, %+v, %v; want revoked", tok, g, err)
	}
}

// testErasureSeen: a person erased at one instance has no token, consent
// or export left at the other, and erasing there again finds nothing.
func testErasureSeen(t *testing.T, a, b store.Store) {
	ctx := context.Background()
	_, p := personOf(t, a, "ada")
	if revoked(t, b, p.access) {
		t.Fatal("a fresh token reads as revoked")
	}
	if _, err := a.EraseSubject(ctx, "ada"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.GetToken(ctx, p.access); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the other instance still reads ada's token: %v", err)
	}
	err := b.RotateRefresh(ctx, p.refresh, "", epoch, grace, func(*store.Token, *store.Grant) ([]store.IssuedToken, error) {
		return nil, nil
	})
	wantErr(t, "a refresh at the other instance", err, store.ErrNotFound)
	_, err = b.ExportSubject(ctx, "ada")
	wantErr(t, "export at the other instance", err, store.ErrNotFound)
	_, err = b.EraseSubject(ctx, "ada")
	wantErr(t, "erasure again at the other instance", err, store.ErrNotFound)
}
