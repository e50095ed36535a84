package pgstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

// hubSize is how many sites the hub keeps a version of, and watches.
func hubSize(p *Pool) (versions, watched int) {
	p.hub.mu.Lock()
	defer p.hub.mu.Unlock()
	return len(p.hub.versions), len(p.hub.watchers)
}

// siteOf opens issuer's site on p.
func siteOf(t *testing.T, p *Pool, issuer string) *Site {
	t.Helper()
	s, err := p.Site(testContext(t), issuer, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// touch makes a change at s that its other instances are told of.
func touch(t *testing.T, s *Site) {
	t.Helper()
	if err := s.PutSetting(testContext(t), "mcp_connections", []byte(fmt.Sprint(time.Now().UnixNano()))); err != nil {
		t.Fatal(err)
	}
}

// The hub keeps a version of the sites held at this instance, and of no
// other: a platform that holds and lets go of schools for weeks, among a
// database whose other instances change thousands, keeps as many as it
// holds now. Rounds of schools held, changed (here and at another
// instance) and let go of leave the hub with the schools still held.
func TestHubFollowsTheSchoolsHeld(t *testing.T) {
	dsn := pgcluster.Database(t)
	here, there := connect(t, dsn), connect(t, dsn)
	anchor := watch(t, siteOf(t, here, "https://anchor.example"))
	anchor.await(t, store.ChangeAll, 5*time.Second) // the listener's first connection
	anchorThere := siteOf(t, there, "https://anchor.example")

	const rounds, perRound, kept = 3, 12, 2
	var held []func()
	for r := range rounds {
		var stops []func()
		for i := range perRound {
			issuer := fmt.Sprintf("https://r%d-s%d.example", r, i)
			s := siteOf(t, here, issuer)
			stops = append(stops, s.Watch(func(store.Change) {}))
			touch(t, siteOf(t, there, issuer))
			// Schools of the database that this instance never holds.
			touch(t, siteOf(t, there, fmt.Sprintf("https://elsewhere-r%d-s%d.example", r, i)))
		}
		// Notifications arrive in order: the anchor's is after the others'.
		anchor.drain()
		touch(t, anchorThere)
		anchor.await(t, store.ChangeSettings, 5*time.Second)
		if v, w := hubSize(here); v != perRound+1+len(held) || w != v {
			t.Fatalf("round %d, %d schools held: the hub keeps %d versions for %d watched sites", r, perRound+1+len(held), v, w)
		}
		held = append(held, stops[:kept]...)
		for _, stop := range stops[kept:] {
			stop()
		}
		if v, w := hubSize(here); v != 1+len(held) || w != v {
			t.Fatalf("round %d, after letting go: the hub keeps %d versions for %d watched sites, want %d", r, v, w, 1+len(held))
		}
	}
	for _, stop := range held {
		stop()
	}
	if v, w := hubSize(here); v != 1 || w != 1 {
		t.Errorf("the anchor alone held: the hub keeps %d versions for %d watched sites", v, w)
	}
}

// watchUntil is watch with the stop returned rather than left to the
// test's end.
func watchUntil(s *Site) (*changes, func()) {
	c := &changes{ch: make(chan store.Change, 1024)}
	stop := s.Watch(func(ch store.Change) {
		c.mu.Lock()
		c.got = append(c.got, ch)
		c.mu.Unlock()
		c.ch <- ch
	})
	return c, stop
}

// A change made while no one here watched a site is told to the watcher
// that starts after it, whatever the hub heard meanwhile: the site was
// opened before the change and watched after it (its notification went
// by unwatched), or let go of and watched again through the site opened
// before (the hub forgot it). A watcher that joins others after they
// were told of a change its site was opened before is told too.
func TestWatchAfterAnUnwatchedChange(t *testing.T) {
	defer func(d time.Duration) { pollEvery = d }(pollEvery)
	pollEvery = 100 * time.Millisecond
	dsn := pgcluster.Database(t)
	here, there := connect(t, dsn), connect(t, dsn)
	anchor := watch(t, siteOf(t, here, "https://anchor.example"))
	anchor.await(t, store.ChangeAll, 5*time.Second)
	anchorThere := siteOf(t, there, "https://anchor.example")
	settle := func() { // every notification sent so far has arrived here
		anchor.drain()
		touch(t, anchorThere)
		anchor.await(t, store.ChangeSettings, 5*time.Second)
	}
	const issuer = "https://late.example"
	s := siteOf(t, here, issuer)
	other := siteOf(t, there, issuer)

	touch(t, other)
	settle()
	first, stop := watchUntil(s)
	first.await(t, store.ChangeAll, 2*time.Second)
	stop()

	touch(t, other)
	settle()
	again, stop := watchUntil(s)
	again.await(t, store.ChangeAll, 2*time.Second)
	stop()

	fresh := siteOf(t, here, issuer)
	current, stop := watchUntil(fresh)
	defer stop()
	here.hub.mu.Lock()
	v := here.hub.versions[fresh.id]
	here.hub.mu.Unlock()
	if v != fresh.opened {
		t.Errorf("a site opened after the changes starts at version %d, not %d", v, fresh.opened)
	}
	touch(t, other)
	current.await(t, store.ChangeSettings, 2*time.Second)
	late := watch(t, s) // opened before every change so far
	late.await(t, store.ChangeAll, 2*time.Second)
}

// The poll never takes a site's version back: the listener may have seen
// a version past the poll's read.
func TestPollKeepsTheNewerVersion(t *testing.T) {
	dsn := pgcluster.Database(t)
	p := connect(t, dsn)
	s := siteOf(t, p, testIssuer)
	watch(t, s)
	p.hub.mu.Lock()
	ahead := s.opened + 5
	p.hub.versions[s.id] = ahead
	p.hub.mu.Unlock()
	if moved := p.hub.stale(testContext(t)); len(moved) != 0 {
		t.Errorf("the poll reports %v moved", moved)
	}
	p.hub.mu.Lock()
	defer p.hub.mu.Unlock()
	if got := p.hub.versions[s.id]; got != ahead {
		t.Errorf("the poll took the version back to %d from %d", got, ahead)
	}
}
