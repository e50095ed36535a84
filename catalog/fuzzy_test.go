package catalog

import (
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// osa is the optimal string alignment distance computed the plain way,
// the reference the trie walk is checked against.
func osa(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

func TestOSA(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"sextent", "sextant", 1},
		{"pyhton", "python", 1}, // a swap is one edit
		{"lightrom", "lightroom", 1},
		{"calligrafy", "calligraphy", 2},
		{"ca", "abc", 3}, // the restricted form: no edit of a swapped pair
		{"", "abc", 3},
		{"grösse", "grosse", 1},
	}
	for _, tt := range tests {
		if got := osa(tt.a, tt.b); got != tt.want {
			t.Errorf("osa(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// The trie walk finds exactly the keys a scan of every key would.
func TestFuzzyKeysMatchesScan(t *testing.T) {
	raws := [][]byte{demoFeed(t), generatedFeed(300)}
	for _, name := range []string{"harbour-lane", "seeblick"} {
		raw, err := os.ReadFile("testdata/relevance/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, raw)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var buf walkBuffers // shared, as pooled searches share it
	for _, raw := range raws {
		f, err := Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		ix := NewIndex(testOrigin, f)
		var queries []string
		for range 150 {
			k := []rune(ix.keys.at(rng.IntN(ix.keys.len())))
			// One or two random edits of a random key.
			for range 1 + rng.IntN(2) {
				if len(k) == 0 {
					break
				}
				i := rng.IntN(len(k))
				switch rng.IntN(4) {
				case 0:
					k = slices.Delete(k, i, i+1)
				case 1:
					k = slices.Insert(k, i, rune('a'+rng.IntN(26)))
				case 2:
					k[i] = rune('a' + rng.IntN(26))
				default:
					if i+1 < len(k) {
						k[i], k[i+1] = k[i+1], k[i]
					}
				}
			}
			queries = append(queries, string(k))
		}
		queries = append(queries, "lightrom", "sextent", "portrat", "photografy", "zzzz")
		for _, q := range queries {
			d := maxEdits(q)
			if d == 0 {
				continue
			}
			var want []string
			for i := range ix.keys.len() {
				k := ix.keys.at(i)
				if dist := osa(q, k); dist > 0 && dist <= d && maxEdits(k) > 0 {
					want = append(want, k)
				}
			}
			var got []string
			for _, fk := range ix.fuzzyKeys(q, d, &buf, nil) {
				key := ix.keys.at(int(fk.key))
				got = append(got, key)
				if dist := osa(q, key); dist != fk.dist {
					t.Errorf("%q: %q at distance %d, reported %d", q, key, dist, fk.dist)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("fuzzyKeys(%q, %d) = %q, want %q", q, d, got, want)
			}
		}
	}
}
