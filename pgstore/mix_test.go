package pgstore

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// TestConcurrentMix: rotations, revocations and purges of the same grants
// from two instances at once end in the contract's answers only: the
// locks they take never deadlock into a failure, and what they cannot
// avoid (a deadlock) the retries absorb.
func TestConcurrentMix(t *testing.T) {
	dsn := pgcluster.Database(t)
	ctx := testContext(t)
	a, b := openSite(t, dsn), openSite(t, dsn)
	if err := a.PutClient(ctx, &authserver.Client{ID: "app-1", Kind: authserver.KindApp}); err != nil {
		t.Fatal(err)
	}
	const grants = 20
	var refresh [grants]string
	for i := range grants {
		code := fmt.Sprintf("code-%d", i)
		if err := a.PutCode(ctx, code, &authserver.Code{Request: authserver.AuthRequest{ClientID: "app-1"}, ExpiresAt: epoch.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		refresh[i] = fmt.Sprintf("r-%d", i)
		err := a.RedeemCode(ctx, code, func(*authserver.Code) (*authserver.Grant, []authserver.IssuedToken, error) {
			g := fmt.Sprintf("g-%d", i)
			return &authserver.Grant{ID: g, ClientID: "app-1"}, tokenPair(g, fmt.Sprintf("a-%d", i), refresh[i]), nil
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
			return s.RotateRefresh(ctx, refresh[i], epoch, time.Hour, func(_ *authserver.Token, g *authserver.Grant) ([]authserver.IssuedToken, error) {
				return tokenPair(g.ID, fresh(), fresh()), nil
			})
		},
		func(s *Site, i int) error { return s.RevokeToken(ctx, fmt.Sprintf("a-%d", i)) },
		func(s *Site, i int) error { return s.RevokeGrant(ctx, fmt.Sprintf("g-%d", i)) },
		func(s *Site, _ int) error { return s.PurgeExpired(ctx, epoch.Add(2*time.Hour)) },
		func(s *Site, _ int) error { _, err := s.RevokeClientGrants(ctx, "app-1"); return err },
		func(s *Site, _ int) error {
			_, err := s.PutSettingRevoking(ctx, "apps", []byte("off"), authserver.KindApp)
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
				if err := op(s, i); err != nil && !errors.Is(err, authserver.ErrNotFound) {
					t.Errorf("round %d, grant %d: %v", round, i, err)
				}
			})
		}
	}
	wg.Wait()
}
