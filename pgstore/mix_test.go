package pgstore

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

// TestConcurrentMix: rotations, revocations and purges of the same grants
// from two instances at once end in the contract's answers only: the
// locks they take never deadlock into a failure, and what they cannot
// avoid (a deadlock) the retries absorb.
func TestConcurrentMix(t *testing.T) {
	dsn := pgcluster.Database(t)
	ctx := testContext(t)
	a, b := openSite(t, dsn), openSite(t, dsn)
	if err := a.PutClient(ctx, &store.Client{ID: "app-1", Kind: store.KindApp}); err != nil {
		t.Fatal(err)
	}
	const grants = 20
	var refresh [grants]string
	for i := range grants {
		code := fmt.Sprintf("code-%d", i)
		if err := a.PutCode(ctx, code, &store.Code{Request: store.AuthRequest{ClientID: "app-1"}, ExpiresAt: epoch.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		refresh[i] = fmt.Sprintf("r-%d", i)
		err := a.RedeemCode(ctx, code, func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
			g := fmt.Sprintf("g-%d", i)
			return &store.Grant{ID: g, ClientID: "app-1"}, tokenPair(g, fmt.Sprintf("a-%d", i), refresh[i]), nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var serial sync.Mutex
	n := 0
	fresh := func() string {
		serial.Lock()
		defer serial.Unlock()
		n++
		return fmt.Sprintf("new-%d", n)
	}
	ops := []func(s *Site, i int) error{
		func(s *Site, i int) error {
			return s.RotateRefresh(ctx, refresh[i], "", epoch, time.Hour, func(_ *store.Token, g *store.Grant) ([]store.IssuedToken, error) {
				return tokenPair(g.ID, fresh(), fresh()), nil
			})
		},
		func(s *Site, i int) error { return s.RevokeToken(ctx, fmt.Sprintf("a-%d", i)) },
		func(s *Site, i int) error { return s.RevokeGrant(ctx, fmt.Sprintf("g-%d", i)) },
		func(s *Site, _ int) error { return s.PurgeExpired(ctx, epoch.Add(2*time.Hour)) },
		func(s *Site, _ int) error { _, err := s.RevokeClientGrants(ctx, "app-1"); return err },
		func(s *Site, _ int) error {
			_, err := s.PutSettingRevoking(ctx, "apps", []byte("off"), store.KindApp)
			return err
		},
	}
	var wg sync.WaitGroup
	for round := range 10 {
		for i := range grants {
			s := a
			if (round+i)%2 == 1 {
				s = b
			}
			op := ops[(round+i)%len(ops)]
			wg.Go(func() {
				if err := op(s, i); err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Errorf("round %d, grant %d: %v", round, i, err)
				}
			})
		}
	}
	wg.Wait()
}
