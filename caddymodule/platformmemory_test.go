package caddymodule

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// A platform that adds and removes schools for weeks keeps the state of
// the schools that exist, not of every school it has seen: rounds of
// schools added, built (or failed), changed and removed leave nothing of
// the removed ones in the platform (its table, its data files, its built
// schools), the site and store pools, the proxies' holds or the
// scheduler (their background work and rebuilds).
func TestPlatformStateFollowsTheSchools(t *testing.T) {
	tp := newTestPlatform(t, 5)
	broken := tp.brokenData(t)
	jobs := background.Active()
	const rounds, perRound, kept = 4, 12, 2
	var live, keys []string
	built := func(issuer string) {
		tp.do(t, issuer+discoveryPath)
		if b := tp.school(issuer).prepared(); b != nil && b.key != "" {
			keys = append(keys, b.key)
		}
	}
	for r := range rounds {
		var added []string
		for i := range perRound {
			issuer := fmt.Sprintf("https://r%d-s%d.example", r, i)
			extra := ""
			if i%4 == 3 {
				extra = `,"data":` + strconv.Quote(broken) // fails, and is rebuilt in the background
			}
			tp.put(t, issuer, []string{fmt.Sprintf("www.r%d-s%d.example", r, i)}, extra)
			built(issuer)
			if i%3 == 0 {
				tp.put(t, issuer, nil, extra+`,"code_ttl":"30s"`) // changed: built anew
				built(issuer)
			}
			added = append(added, issuer)
		}
		live = append(live, added[:kept]...)
		for _, issuer := range added[kept:] {
			if err := tp.reg.Remove(t.Context(), issuer); err != nil {
				t.Fatal(err)
			}
			if tp.upstream.holds(issuer) != 0 || storeOpen(tp.dataFile(issuer)) {
				t.Errorf("round %d: %s removed still holds its proxy or its store", r, issuer)
			}
		}
		if n := len(tp.schools()); n != len(live) {
			t.Fatalf("round %d: the table has %d schools, the registry %d", r, n, len(live))
		}
		tp.mu.Lock()
		files, active := len(tp.dataFiles), tp.built.Len()
		tp.mu.Unlock()
		if files > len(live) || active > len(live) {
			t.Errorf("round %d: %d data files and %d built schools for %d schools", r, files, active, len(live))
		}
	}
	for _, issuer := range live {
		if err := tp.reg.Remove(t.Context(), issuer); err != nil {
			t.Fatal(err)
		}
	}
	tp.mu.Lock()
	files, active := len(tp.dataFiles), tp.built.Len()
	tp.mu.Unlock()
	if files != 0 || active != 0 || len(tp.schools()) != 0 {
		t.Errorf("every school removed: %d data files, %d built schools, %d in the table", files, active, len(tp.schools()))
	}
	for _, key := range keys {
		if n := siteHeld(key); n != 0 {
			t.Errorf("the site pool holds a removed school's state %d times", n)
		}
	}
	// A job leaves the scheduler when its school's context ends, which
	// runs in a goroutine of its own.
	for deadline := time.Now().Add(10 * time.Second); background.Active() > jobs; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the scheduler has %d jobs, %d before the schools came", background.Active(), jobs)
		}
	}
}
