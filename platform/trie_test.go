package platform

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/schoolgate/schoolgate/registry"
)

// The trie holds what a map would through any sequence of sets and
// deletes, enough keys that its leaves split several levels deep, and a
// clone changed afterwards leaves the trie it was cloned from as it was.
func TestTrieMatchesAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tr trie[int]
	edit := new(editToken)
	want := map[string]int{}
	var frozen trie[int]
	var frozenWant map[string]int
	for i := range 60000 {
		key := fmt.Sprintf("s%d.example", rng.IntN(20000))
		if rng.IntN(3) == 0 {
			tr.del(key, edit)
			delete(want, key)
		} else {
			tr.set(key, i, edit)
			want[key] = i
		}
		if i == 30000 {
			// From here on the changes go to a clone, under a new
			// token: the first half is frozen.
			frozen, frozenWant = tr, maps.Clone(want)
			edit = new(editToken)
		}
	}
	check := func(name string, tr *trie[int], want map[string]int) {
		t.Helper()
		if tr.n != len(want) {
			t.Errorf("%s: %d keys, want %d", name, tr.n, len(want))
		}
		got := maps.Collect(tr.all())
		if !maps.Equal(got, want) {
			t.Errorf("%s: the keys iterated differ from the map's (%d, want %d)", name, len(got), len(want))
		}
		for k, v := range want {
			if g, ok := tr.get(k); !ok || g != v {
				t.Fatalf("%s: get(%s) = %d %v, want %d", name, k, g, ok, v)
			}
		}
		if _, ok := tr.get("absent.example"); ok {
			t.Errorf("%s: an absent key found", name)
		}
	}
	check("changed", &tr, want)
	check("frozen", &frozen, frozenWant)
}

// bigTable is a table of n https schools, each with an alias.
func bigTable(n int) *Table[*recSchool] {
	tb := NewTable[*recSchool](n)
	for i := range n {
		tb.Add(&recSchool{registry.Record{Issuer: fmt.Sprintf("https://s%d.example", i),
			Hosts: []string{fmt.Sprintf("www.s%d.example", i)}}})
	}
	return tb
}

// A change to a large table copies the paths to the keys it changes, not
// the table: what it allocates is the same at 1,000 schools as at 50,000
// (a copy of the maps of 50,000 would be megabytes).
func TestTableChangeCopiesLittle(t *testing.T) {
	allocated := func(tb *Table[*recSchool]) uint64 {
		add := &recSchool{registry.Record{Issuer: "https://new.example", Hosts: []string{"www.new.example"}}}
		old := tb.School("https://s7.example")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		next := tb.Clone()
		next.Remove(old)
		next.Add(add)
		runtime.ReadMemStats(&after)
		if next.Lookup("new.example", true) != add || next.Lookup("s7.example", true) != nil ||
			tb.Lookup("s7.example", true) != old || tb.Lookup("new.example", true) != nil {
			t.Fatal("the change is not in the clone alone")
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := allocated(bigTable(1000)), allocated(bigTable(50000))
	if large > 64<<10 || large > 4*small+16<<10 {
		t.Errorf("one change allocates %d bytes at 50,000 schools, %d at 1,000", large, small)
	}
}

// What one change costs (Replace, as a registry's change is applied) at
// 10,000 and 100,000 schools, and a burst of 1,000 changes applied one
// at a time.
func BenchmarkTableChange(b *testing.B) {
	for _, n := range []int{10, 10000, 100000} {
		tb := NewTable[*watchedSchool](n)
		for i := range n {
			tb.Add(newWatched(record(fmt.Sprintf("https://s%d.example", i), `{}`)))
		}
		b.Run(fmt.Sprintf("one/%d", n), func(b *testing.B) {
			rec := record("https://new.example", `{}`)
			for b.Loop() {
				c, _ := Replace(tb, rec.Issuer, &rec, watchedOf)
				_ = c.Next
			}
		})
		b.Run(fmt.Sprintf("burst1000/%d", n), func(b *testing.B) {
			recs := make([]registry.Record, 1000)
			for i := range recs {
				recs[i] = record(fmt.Sprintf("https://burst%d.example", i), `{}`)
			}
			for b.Loop() {
				t := tb
				for i := range recs {
					c, _ := Replace(t, recs[i].Issuer, &recs[i], watchedOf)
					t = c.Next
				}
			}
		})
	}
}

// A request's lookup, at 10 and 100,000 schools.
func BenchmarkTableLookup(b *testing.B) {
	for _, n := range []int{10, 100000} {
		tb := bigTable(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if tb.Lookup("s7.example", true) == nil {
					b.Fatal("not found")
				}
			}
		})
	}
}

// A table of 100,000 schools keeps 200,000 entries: an entry is its key
// and its value, no more.
func TestTrieEntrySize(t *testing.T) {
	if size := unsafe.Sizeof(trieEntry[*recSchool]{}); size != 24 {
		t.Errorf("an entry takes %d bytes, want 24 (a string and a pointer)", size)
	}
}
