package registrytest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/schoolgate/schoolgate/registry"
)

// testConditional: a registry.Conditional writes only at the version its
// condition names, through either handle (a and b may be one); of racing
// conditional writes at one version, exactly one is stored.
func testConditional(t *testing.T, a, b registry.Registry) {
	ca, okA := a.(registry.Conditional)
	cb, okB := b.(registry.Conditional)
	if !okA || !okB {
		t.Skip("not a registry.Conditional")
	}
	ctx := context.Background()
	const issuer = "https://school.example"
	first, err := ca.PutIf(ctx, school(issuer), 0)
	if err != nil || first.Version != 1 {
		t.Fatalf("PutIf of a new school at 0: %+v, %v", first, err)
	}
	wantVersionError(t, "PutIf of a stored school at 0", putIfErr(ctx, cb, school(issuer), 0), 0, 1, true)
	if second, err := ca.PutIf(ctx, school(issuer, "www.school.example"), 1); err != nil || second.Version != 2 {
		t.Fatalf("PutIf at the stored version: %+v, %v", second, err)
	}
	wantVersionError(t, "PutIf at a version replaced", putIfErr(ctx, cb, school(issuer), 1), 1, 2, true)
	if got, _ := b.Get(ctx, issuer); len(got.Hosts) != 1 {
		t.Errorf("a refused PutIf was written: %+v", got)
	}
	wantVersionError(t, "PutIf of a school that has no record", putIfErr(ctx, cb, school("https://none.example"), 3), 3, 0, false)
	if _, err := b.Get(ctx, "https://none.example"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("a refused PutIf created the school: %v", err)
	}
	wantVersionError(t, "RemoveIf at a version replaced", cb.RemoveIf(ctx, issuer, 1), 1, 2, true)
	if err := cb.RemoveIf(ctx, issuer, 2); err != nil {
		t.Fatalf("RemoveIf at the stored version: %v", err)
	}
	wantErr(t, "RemoveIf of a school removed", ca.RemoveIf(ctx, issuer, 2), registry.ErrNotFound)

	// Racing writers, each sure of the version it read.
	for _, at := range []int64{0, 1} {
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			c := ca
			if i%2 == 1 {
				c = cb
			}
			rec := school(issuer, fmt.Sprintf("w%d.school.example", i))
			wg.Go(func() { _, errs[i] = c.PutIf(ctx, rec, at) })
		}
		wg.Wait()
		stored := 0
		for _, err := range errs {
			switch {
			case err == nil:
				stored++
			case !errors.Is(err, registry.ErrVersionChanged):
				t.Errorf("a racing PutIf at %d: %v, want ErrVersionChanged", at, err)
			}
		}
		if stored != 1 {
			t.Errorf("%d racing PutIfs at %d were stored, want 1", stored, at)
		}
	}
}

func wantVersionError(t *testing.T, what string, err error, want, stored int64, exists bool) {
	t.Helper()
	var v *registry.VersionError
	if !errors.As(err, &v) || !errors.Is(err, registry.ErrVersionChanged) || v.Want != want || v.Exists != exists ||
		(exists && v.Stored != stored) {
		t.Errorf("%s: %v (%+v), want a *VersionError of %d, stored %d, exists %v", what, err, v, want, stored, exists)
	}
}

// putIfErr is PutIf's error.
func putIfErr(ctx context.Context, c registry.Conditional, r registry.Record, version int64) error {
	_, err := c.PutIf(ctx, r, version)
	return err
}
