// Package registrytest is the conformance suite of registry.Registry:
// every registry (in memory, a directory, PostgreSQL) passes it
// unchanged, so a platform can rely on the contract and not on one
// implementation.
package registrytest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/registry"
)

// Run checks the registry that open returns, a fresh and empty one per
// subtest, checking configurations with validate (nil: none but
// Record.Check), against the contract stated on registry.Registry, and
// registry.Conditional's when it implements it.
func Run(t *testing.T, open func(t *testing.T, validate registry.Validator) registry.Registry) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, r registry.Registry)
	}{
		{"PutGet", testPutGet},
		{"NotFound", testNotFound},
		{"HostTaken", testHostTaken},
		{"ReplaceOwnHosts", testReplaceOwnHosts},
		{"RemoveFreesHosts", testRemoveFreesHosts},
		{"CheckRefused", testCheckRefused},
		{"Watch", testWatch},
		{"WatchStop", testWatchStop},
		{"WatchSerial", testWatchSerial},
		{"CancelledContext", testCancelledContext},
		{"Conditional", func(t *testing.T, r registry.Registry) { testConditional(t, r, r) }},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t, nil)) })
	}
	t.Run("Validator", func(t *testing.T) { testValidator(t, open) })
}

// within is the bound the contract sets on a change reaching a watcher.
const within = time.Second

// config is a school's configuration as the tests write it.
var config = json.RawMessage(`{"upstream": "http://127.0.0.1:9080", "rules": [{"path": "/account/*", "audience": "member"}]}`)

// school is a record of issuer with hosts and the tests' configuration.
func school(issuer string, hosts ...string) registry.Record {
	return registry.Record{Issuer: issuer, Hosts: hosts, Config: config}
}

// put stores r and fails the test if it cannot.
func put(t *testing.T, r registry.Registry, rec registry.Record) registry.Record {
	t.Helper()
	got, err := r.Put(context.Background(), rec)
	if err != nil {
		t.Fatalf("Put(%s): %v", rec.Issuer, err)
	}
	return got
}

// sameStored reports whether a and b are one stored version of a record.
func sameStored(a, b registry.Record) bool {
	return registry.SameRecord(&a, &b) && a.Version == b.Version && a.UpdatedAt.Equal(b.UpdatedAt)
}

// sameJSON reports whether a and b are equal JSON values, whatever their
// spacing and key order: a registry may store a configuration in a form
// of its own.
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

// wantErr fails the test unless err is want.
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got error %v, want %v", what, err, want)
	}
}

// issuers returns the issuers of list, sorted.
func issuers(list []registry.Record) []string {
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = r.Issuer
	}
	slices.Sort(out)
	return out
}

// wantIssuers fails the test unless r lists exactly want (sorted).
func wantIssuers(t *testing.T, r registry.Registry, want ...string) {
	t.Helper()
	list, err := r.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := issuers(list); !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
}

// eventually polls cond until it holds, for at most within: for what
// another instance reads, which the contract bounds by a second.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// watcher collects what a Watch function is told, and counts the calls
// that overlapped another: the contract has none.
type watcher struct {
	ch       chan registry.Change
	mu       sync.Mutex
	got      []registry.Change
	stop     func()
	inFlight atomic.Int32
	overlaps atomic.Int32
	pause    time.Duration // each call lasts at least this long
}

// watch registers a watcher on r and waits until changes written
// through writer reach it: a registry may start listening in the
// background, and what is written before it listens is announced only as
// "read everything" (an empty issuer). The sentinel school it writes to
// find out is removed again.
func watch(t *testing.T, writer, r registry.Registry) *watcher {
	t.Helper()
	return watchSlowly(t, writer, r, 0)
}

// watchSlowly is watch with calls that last at least pause, which widens
// the window an overlap of two needs.
func watchSlowly(t *testing.T, writer, r registry.Registry, pause time.Duration) *watcher {
	t.Helper()
	w := &watcher{ch: make(chan registry.Change, 4096), pause: pause}
	w.stop = r.Watch(w.call)
	t.Cleanup(func() {
		w.stop()
		if n := w.overlaps.Load(); n > 0 {
			t.Errorf("%d calls of one watcher overlapped another", n)
		}
	})
	const sentinel = "https://sentinel.example"
	deadline := time.Now().Add(10 * time.Second)
	for seen := false; !seen; {
		if time.Now().After(deadline) {
			t.Fatal("Watch: no change written through the registry arrived in 10 s")
		}
		put(t, writer, school(sentinel))
		seen = w.seen(200*time.Millisecond, sentinel)
	}
	if err := writer.Remove(context.Background(), sentinel); err != nil {
		t.Fatal(err)
	}
	w.await(t, sentinel)
	w.drain()
	return w
}

// call is the watcher's function.
func (w *watcher) call(c registry.Change) {
	if w.inFlight.Add(1) > 1 {
		w.overlaps.Add(1)
	}
	defer w.inFlight.Add(-1)
	time.Sleep(w.pause)
	w.mu.Lock()
	w.got = append(w.got, c)
	w.mu.Unlock()
	w.ch <- c
}

// seen waits up to limit for a change of each of issuers, skipping
// others, and reports whether all came.
func (w *watcher) seen(limit time.Duration, issuers ...string) bool {
	missing := map[string]bool{}
	for _, issuer := range issuers {
		missing[issuer] = true
	}
	deadline := time.After(limit)
	for len(missing) > 0 {
		select {
		case c := <-w.ch:
			delete(missing, c.Issuer)
		case <-deadline:
			return false
		}
	}
	return true
}

// await fails the test unless a change of each of issuers arrives within
// the contract's bound. Changes of other issuers, and "read everything",
// are skipped: a registry may send those as well.
func (w *watcher) await(t *testing.T, issuers ...string) {
	t.Helper()
	if !w.seen(within, issuers...) {
		w.mu.Lock()
		defer w.mu.Unlock()
		t.Fatalf("no change of each of %v within %v; got %v", issuers, within, w.got)
	}
}

// drain forgets what has arrived so far.
func (w *watcher) drain() {
	for {
		select {
		case <-w.ch:
		default:
			return
		}
	}
}
