package authserver

import (
	"slices"
	"testing"
	"time"
)

// Grant ids sort as their creation times do, and ids of one instant
// still differ.
func TestGrantIDsSortByTime(t *testing.T) {
	base := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var ids []string
	seen := map[string]bool{}
	for i := range 200 {
		// Two grants per microsecond, and times far apart (a carry
		// through every hex digit).
		at := base.Add(time.Duration(i/2) * time.Microsecond)
		if i >= 100 {
			at = base.Add(time.Duration(i) * 1000 * time.Hour)
		}
		id := newGrantID(at)
		if seen[id] || len(id) != 38 {
			t.Fatalf("id %q: repeated or not 38 characters", id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	if !slices.IsSortedFunc(ids, func(a, b string) int { return compareTimePart(a, b) }) {
		t.Errorf("ids do not sort by creation time: %v", ids[:6])
	}
}

// compareTimePart compares the time parts of two grant ids: the random
// part of ids of one microsecond may sort either way.
func compareTimePart(a, b string) int {
	switch {
	case a[:16] < b[:16]:
		return -1
	case a[:16] > b[:16]:
		return 1
	}
	return 0
}
