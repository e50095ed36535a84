package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

func testNotFound(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		call func(t *testing.T) error
	}{
		{"GetClient", func(*testing.T) error { _, err := s.GetClient(ctx, "x"); return err }},
		{"DeleteClient", func(*testing.T) error { _, err := s.DeleteClient(ctx, "x"); return err }},
		{"TakePending", func(*testing.T) error { _, err := s.TakePending(ctx, "x"); return err }},
		{"GetConsent", func(*testing.T) error { _, err := s.GetConsent(ctx, "x", "y"); return err }},
		{"RedeemCode", func(t *testing.T) error {
			return s.RedeemCode(ctx, "x", func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
				t.Error("a callback ran for a missing row")
				return nil, nil, nil
			})
		}},
		{"GetToken", func(*testing.T) error { _, _, err := s.GetToken(ctx, "x"); return err }},
		{"RotateRefresh", func(t *testing.T) error {
			return s.RotateRefresh(ctx, "x", "", epoch, grace, func(*store.Token, *store.Grant) ([]store.IssuedToken, error) {
				t.Error("a callback ran for a missing row")
				return nil, nil
			})
		}},
		{"RevokeToken", func(*testing.T) error { return s.RevokeToken(ctx, "x") }},
		{"DisconnectGrant", func(*testing.T) error { _, err := s.DisconnectGrant(ctx, "x", "ada"); return err }},
		{"DisconnectClient", func(*testing.T) error { _, err := s.DisconnectClient(ctx, "x", "ada"); return err }},
		{"GetSetting", func(*testing.T) error { _, err := s.GetSetting(ctx, "x"); return err }},
	} {
		t.Run(c.name, func(t *testing.T) { wantErr(t, c.name, c.call(t), store.ErrNotFound) })
	}
}

// testCancelledContext: a caller that has given up is refused before the
// store acts, with the context's own error.
func testCancelledContext(t *testing.T, s store.Store) {
	live := context.Background()
	_, p := grantOf(t, s, "app-1")
	code := unique("code")
	if err := s.PutCode(live, code, newCode("app-1")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(live)
	cancel()
	issue := func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
		t.Error("issue ran under a cancelled context")
		return nil, nil, nil
	}
	rotate := func(*store.Token, *store.Grant) ([]store.IssuedToken, error) {
		t.Error("rotate ran under a cancelled context")
		return nil, nil
	}
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"LoadKeys", func() error { _, err := s.LoadKeys(ctx); return err }},
		{"InitKeys", func() error { _, err := s.InitKeys(ctx, store.StoredKey{KID: "k"}); return err }},
		{"RotateKey", func() error { return s.RotateKey(ctx, store.StoredKey{KID: "k"}) }},
		{"CreateClient", func() error { _, _, err := s.CreateClient(ctx, &store.Client{ID: "x"}, 0); return err }},
		{"GetClient", func() error { _, err := s.GetClient(ctx, "x"); return err }},
		{"PutClient", func() error { return s.PutClient(ctx, &store.Client{ID: "x"}) }},
		{"DeleteClient", func() error { _, err := s.DeleteClient(ctx, "x"); return err }},
		{"ListClients", func() error { _, err := s.ListClients(ctx); return err }},
		{"CountClientsByKind", func() error { _, err := s.CountClientsByKind(ctx, store.KindApp); return err }},
		{"PutPending", func() error { return s.PutPending(ctx, &store.PendingAuth{ID: "x"}) }},
		{"TakePending", func() error { _, err := s.TakePending(ctx, "x"); return err }},
		{"GetConsent", func() error { _, err := s.GetConsent(ctx, "x", "y"); return err }},
		{"PutConsent", func() error { return s.PutConsent(ctx, "x", "y", &store.Consent{}) }},
		{"PutCode", func() error { return s.PutCode(ctx, "x", newCode("app-1")) }},
		{"RedeemCode", func() error { return s.RedeemCode(ctx, code, issue) }},
		{"GetToken", func() error { _, _, err := s.GetToken(ctx, p.access); return err }},
		{"RotateRefresh", func() error { return s.RotateRefresh(ctx, p.refresh, "", epoch, grace, rotate) }},
		{"RevokeToken", func() error { return s.RevokeToken(ctx, p.refresh) }},
		{"RevokeGrant", func() error { _, g, _ := s.GetToken(live, p.access); return s.RevokeGrant(ctx, g.ID) }},
		{"RevokeClientGrants", func() error { _, err := s.RevokeClientGrants(ctx, "app-1"); return err }},
		{"PurgeExpired", func() error { return s.PurgeExpired(ctx, epoch.Add(1000*time.Hour)) }},
		{"ListGrants", func() error {
			_, err := s.ListGrants(ctx, store.GrantQuery{Subject: "ada", Limit: 10})
			return err
		}},
		{"ListConnections", func() error {
			_, err := s.ListConnections(ctx, store.ConnectionQuery{Subject: "ada", Limit: 10})
			return err
		}},
		{"GrantCounts", func() error { _, err := s.GrantCounts(ctx); return err }},
		{"DisconnectClient", func() error { _, err := s.DisconnectClient(ctx, "app-1", "ada"); return err }},
		{"DisconnectGrant", func() error {
			_, g, _ := s.GetToken(live, p.access)
			_, err := s.DisconnectGrant(ctx, g.ID, "ada")
			return err
		}},
		{"GetSetting", func() error { _, err := s.GetSetting(ctx, "x"); return err }},
		{"PutSetting", func() error { return s.PutSetting(ctx, "x", []byte("y")) }},
		{"InitSetting", func() error { _, err := s.InitSetting(ctx, "x", []byte("y")); return err }},
		{"PutSettingRevoking", func() error {
			_, err := s.PutSettingRevoking(ctx, "x", []byte("y"), store.KindApp)
			return err
		}},
		{"SaveCatalog", func() error { return s.SaveCatalog(ctx, []byte("{}")) }},
		{"LoadCatalog", func() error { _, err := s.LoadCatalog(ctx); return err }},
		{"AddUsage", func() error { return s.AddUsage(ctx, []store.UsageDelta{usageDelta(epoch, 1)}) }},
		{"LoadUsage", func() error { _, err := s.LoadUsage(ctx); return err }},
		{"AddSteps", func() error { return s.AddSteps(ctx, []store.Step{step("app-1", "", "use", "", 0)}) }},
		{"QuerySteps", func() error { _, err := s.QuerySteps(ctx, store.StepQuery{ClientID: "app-1"}); return err }},
		{"PurgeSteps", func() error { _, err := s.PurgeSteps(ctx, epoch); return err }},
	} {
		wantErr(t, c.name, c.call(), context.Canceled)
	}
	// Nothing was done: the writes left no trace.
	if u, err := s.LoadUsage(live); err != nil || len(u.Buckets) != 0 {
		t.Errorf("AddUsage acted under a cancelled context: %+v, %v", u, err)
	}
	if rows, err := s.QuerySteps(live, store.StepQuery{ClientID: "app-1"}); err != nil || len(rows) != 0 {
		t.Errorf("AddSteps acted under a cancelled context: %v, %v", rows, err)
	}
	if _, err := s.GetClient(live, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PutClient acted under a cancelled context: %v", err)
	}
	if _, err := s.GetSetting(live, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PutSetting acted under a cancelled context: %v", err)
	}
	if revoked(t, s, p.access) || revoked(t, s, p.refresh) {
		t.Error("a revocation acted under a cancelled context")
	}
	if tok, _, _ := s.GetToken(live, p.access); tok == nil {
		t.Error("PurgeExpired acted under a cancelled context")
	}
}

// testCallbacksRerun: a store may run a callback more than once (bbolt
// reruns a batch's survivors when one of them fails). Half the redeems
// here fail, so concurrent ones retry; each callback counts its calls and
// mints fresh tokens on every call. Whatever the reruns, only the last
// call's tokens are stored and a failed redeem stores nothing.
func testCallbacksRerun(t *testing.T, s store.Store) {
	ctx := context.Background()
	const n = 32
	codes := make([]string, n)
	for i := range codes {
		codes[i] = unique("code")
		if err := s.PutCode(ctx, codes[i], newCode("app-1")); err != nil {
			t.Fatal(err)
		}
	}
	refused := errors.New("refused")
	type result struct {
		calls int
		all   []pair // every call's tokens, the last one's last
		err   error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := &results[i]
			r.err = s.RedeemCode(ctx, codes[i], func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
				r.calls++
				g := newGrant(c)
				p, toks := newTokens(g)
				r.all = append(r.all, p)
				if i%2 == 1 {
					return nil, nil, refused
				}
				return g, toks, nil
			})
		})
	}
	wg.Wait()
	reruns := 0
	for i, r := range results {
		reruns += r.calls - 1
		last := r.all[len(r.all)-1]
		if i%2 == 1 {
			if r.err != refused {
				t.Errorf("redeem %d: %v, want the callback's error", i, r.err)
			}
			last = pair{}
		} else if r.err != nil {
			t.Errorf("redeem %d: %v", i, r.err)
		}
		for _, p := range r.all {
			_, _, err := s.GetToken(ctx, p.access)
			if stored := err == nil; stored != (p == last) {
				t.Errorf("redeem %d: token of a call stored = %v (err %v), want only the last successful call's", i, stored, err)
			}
		}
	}
	t.Logf("%d callback reruns over %d redeems", reruns, n)
}
