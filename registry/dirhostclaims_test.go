package registry

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// hostClaims holds what a map of lists would through any sequence of
// claims added and removed, keeps nothing for a file's own claim (its
// name the host's, found in the files) and a list only for a host
// claimed twice or more by other files.
func TestHostClaims(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	files := map[string]*dirFile{}
	c := newHostClaims(&files)
	want := map[string][]string{}
	hosts := []string{"a", "b", "c:8443"}
	names := []string{"f1", "f2", "f3", "f4", "a.json", "b.json", "c_8443.json"}
	for step := range 4000 {
		h, name := hosts[rng.IntN(len(hosts))], names[rng.IntN(len(names))]
		own := ownFile(h, name)
		if name == "a.json" || name == "b.json" || name == "c_8443.json" {
			if !own {
				continue // a file named after one host claims that one here
			}
		}
		if slices.Contains(want[h], name) {
			c.remove(h, name)
			if own {
				delete(files, name)
			}
			if want[h] = slices.DeleteFunc(want[h], func(n string) bool { return n == name }); len(want[h]) == 0 {
				delete(want, h)
			}
		} else {
			if own {
				files[name] = &dirFile{rec: Record{Issuer: "https://" + h}}
			}
			c.add(h, name)
			want[h] = append(want[h], name)
		}
		for _, h := range hosts {
			got := slices.Sorted(c.of(h))
			exp := slices.Sorted(slices.Values(want[h]))
			if !slices.Equal(got, exp) || c.count(h) != len(exp) {
				t.Fatalf("step %d: %s claimed by %v (count %d), want %v", step, h, got, c.count(h), exp)
			}
			others := slices.DeleteFunc(slices.Clone(exp), func(n string) bool { return ownFile(h, n) })
			if _, listed := c.more[h]; listed != (len(others) > 1) {
				t.Fatalf("step %d: %s has a list: %v, claimed %d times by other files", step, h, listed, len(others))
			}
			if name, kept := c.one[h]; kept && ownFile(h, name) {
				t.Fatalf("step %d: %s keeps its own file's claim", step, h)
			}
		}
	}
}
