package registry

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// hostClaims holds what a map of lists would through any sequence of
// claims added and removed, and keeps a list only for a host claimed
// twice or more.
func TestHostClaims(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := newHostClaims(0)
	want := map[string][]string{}
	hosts := []string{"a", "b", "c"}
	names := []string{"f1", "f2", "f3", "f4"}
	for step := range 2000 {
		h, name := hosts[rng.IntN(len(hosts))], names[rng.IntN(len(names))]
		if slices.Contains(want[h], name) {
			c.remove(h, name)
			if want[h] = slices.DeleteFunc(want[h], func(n string) bool { return n == name }); len(want[h]) == 0 {
				delete(want, h)
			}
		} else {
			c.add(h, name)
			want[h] = append(want[h], name)
		}
		for _, h := range hosts {
			got := slices.Sorted(c.of(h))
			exp := slices.Sorted(slices.Values(want[h]))
			if !slices.Equal(got, exp) || c.count(h) != len(exp) {
				t.Fatalf("step %d: %s claimed by %v (count %d), want %v", step, h, got, c.count(h), exp)
			}
			if _, listed := c.more[h]; listed != (len(exp) > 1) {
				t.Fatalf("step %d: %s has a list: %v, claimed %d times", step, h, listed, len(exp))
			}
		}
	}
}
