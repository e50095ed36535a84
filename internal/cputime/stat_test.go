package cputime

import "testing"

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, text  string
		busy, total int64
		cpus        int
		ok          bool
	}{
		{"two processors", "cpu  100 5 50 800 20 3 2 10 0 0\ncpu0 50 2 25 400 10 1 1 5 0 0\ncpu1 50 3 25 400 10 2 1 5 0 0\nintr 1\n",
			165, 990, 2, true}, // nice (5) is not busy
		{"no per-processor lines", "cpu  1 0 0 1 0 0 0 0\n", 0, 0, 0, false},
		{"not the processors' line", "intr 1 2 3\n", 0, 0, 0, false},
		{"too few fields", "cpu  1 2 3\ncpu0 1 2 3\n", 0, 0, 0, false},
		{"not a number", "cpu  1 x 0 1 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0\n", 0, 0, 0, false},
		{"empty", "", 0, 0, 0, false},
	} {
		busy, total, cpus, ok := parseStat(tc.text)
		if ok != tc.ok || ok && (busy != tc.busy || total != tc.total || cpus != tc.cpus) {
			t.Errorf("%s: %d %d %d %v, want %d %d %d %v", tc.name, busy, total, cpus, ok, tc.busy, tc.total, tc.cpus, tc.ok)
		}
	}
}

// On this machine, System reads something sensible where it is read.
func TestSystem(t *testing.T) {
	busy, total, cpus, ok := System()
	if !ok {
		t.Skip("no /proc/stat here")
	}
	if busy <= 0 || total < busy || cpus <= 0 {
		t.Fatalf("busy %d, total %d, cpus %d", busy, total, cpus)
	}
}
