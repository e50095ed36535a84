package registrytest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/schoolgate/schoolgate/registry"
)

// RunShared checks a registry that several gateway instances share: open
// returns two handles on one fresh, empty registry, each with its own
// connections or watches, as two instances would hold them. What one
// writes, the other reads and is told of; of two racing claims on a host,
// exactly one wins; a conditional write (registry.Conditional) through
// one handle is judged against the other's writes.
func RunShared(t *testing.T, open func(t *testing.T) (a, b registry.Registry)) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, a, b registry.Registry)
	}{
		{"SeenByOther", testSeenByOther},
		{"HostTakenAcross", testHostTakenAcross},
		{"OneHostOwner", testOneHostOwner},
		{"ConditionalAcross", testConditional},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := open(t)
			c.run(t, a, b)
		})
	}
}

// testSeenByOther: a write through one handle reaches the other's
// watchers within the bound, with its issuer, and the other then reads
// it; the version counts the writes of both.
func testSeenByOther(t *testing.T, a, b registry.Registry) {
	ctx := context.Background()
	atB := watch(t, a, b)
	atA := watch(t, b, a)
	first := put(t, a, school("https://school.example", "www.school.example"))
	atB.await(t, "https://school.example")
	if got, err := b.Get(ctx, "https://school.example"); err != nil || !sameStored(got, first) {
		t.Fatalf("the other reads %+v, %v; want %+v", got, err, first)
	}
	atA.drain() // a's own write was announced to it
	second := put(t, b, school("https://school.example"))
	if second.Version != 2 {
		t.Errorf("a replacement through the other = version %d, want 2", second.Version)
	}
	atA.await(t, "https://school.example")
	if got, err := a.Get(ctx, "https://school.example"); err != nil || !sameStored(got, second) {
		t.Errorf("the first reads %+v, %v; want %+v", got, err, second)
	}
	atB.drain()
	if err := a.Remove(ctx, "https://school.example"); err != nil {
		t.Fatal(err)
	}
	atB.await(t, "https://school.example")
	_, err := b.Get(ctx, "https://school.example")
	wantErr(t, "the other's Get after Remove", err, registry.ErrNotFound)
	wantIssuers(t, b)
}

// testHostTakenAcross: a host written through one handle is refused to
// the other at once, not once it has been told: host uniqueness is the
// registry's, not each handle's.
func testHostTakenAcross(t *testing.T, a, b registry.Registry) {
	owner := put(t, a, school("https://a.example", "www.a.example"))
	_, err := b.Put(context.Background(), school("https://c.example", "www.a.example"))
	var taken *registry.HostTakenError
	if !errors.As(err, &taken) || taken.Host != "www.a.example" || taken.Owner != owner.Issuer {
		t.Errorf("the other's Put = %v; want a *HostTakenError of www.a.example owned by %s", err, owner.Issuer)
	}
	if err := a.Remove(context.Background(), "https://a.example"); err != nil {
		t.Fatal(err)
	}
	put(t, b, school("https://c.example", "www.a.example"))
}

// testOneHostOwner: records racing for one host through both handles:
// one is stored, every other is refused naming it.
func testOneHostOwner(t *testing.T, a, b registry.Registry) {
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		r := a
		if i%2 == 1 {
			r = b
		}
		wg.Go(func() {
			_, errs[i] = r.Put(context.Background(), school(fmt.Sprintf("https://s%d.example", i), "shared.example"))
		})
	}
	wg.Wait()
	var winners []string
	for i, err := range errs {
		if err == nil {
			winners = append(winners, fmt.Sprintf("https://s%d.example", i))
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d records were stored with one host (%v); want one: %v", len(winners), winners, errs)
	}
	for i, err := range errs {
		var taken *registry.HostTakenError
		if err != nil && (!errors.As(err, &taken) || taken.Host != "shared.example" || taken.Owner != winners[0]) {
			t.Errorf("racer %d: %v; want a *HostTakenError of shared.example owned by %s", i, err, winners[0])
		}
	}
	for _, r := range []registry.Registry{a, b} {
		eventually(t, "each handle lists the one winner", func() bool {
			list, err := r.List(context.Background())
			return err == nil && len(list) == 1 && list[0].Issuer == winners[0]
		})
	}
}
