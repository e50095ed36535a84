package registrytest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/registry"
)

// testPutGet: a record is stored in its one spelling, read back as
// stored, and replaced with its Version counting the writes.
func testPutGet(t *testing.T, r registry.Registry) {
	ctx := context.Background()
	in := school("HTTPS://School.Example:443/", "WWW.School.Example.")
	got := put(t, r, in)
	if got.Issuer != "https://school.example" || !slices.Equal(got.Hosts, []string{"www.school.example"}) {
		t.Errorf("Put stored issuer %q, hosts %q; want each in its one spelling", got.Issuer, got.Hosts)
	}
	if in.Hosts[0] != "WWW.School.Example." {
		t.Errorf("Put changed the caller's hosts to %q", in.Hosts)
	}
	if got.Version != 1 || got.UpdatedAt.IsZero() || !sameJSON(got.Config, config) || got.Disabled {
		t.Errorf("Put = %+v; want version 1, a time, the configuration given", got)
	}
	read, err := r.Get(ctx, "https://school.example")
	if err != nil || !sameStored(read, got) {
		t.Fatalf("Get = %+v, %v; want %+v", read, err, got)
	}
	wantIssuers(t, r, "https://school.example")

	again := school("https://school.example", "www.school.example", "school.example:8443")
	again.Disabled = true
	second := put(t, r, again)
	if second.Version != 2 || second.UpdatedAt.Before(got.UpdatedAt) || !second.Disabled ||
		!slices.Equal(second.Hosts, []string{"www.school.example", "school.example:8443"}) {
		t.Errorf("replacing Put = %+v; want version 2, disabled, both hosts, a time not before %v", second, got.UpdatedAt)
	}
	read, err = r.Get(ctx, "https://school.example")
	if err != nil || !sameStored(read, second) {
		t.Errorf("Get after the replacement = %+v, %v; want %+v", read, err, second)
	}
	list, err := r.List(ctx)
	if err != nil || len(list) != 1 || !sameStored(list[0], second) {
		t.Errorf("List after the replacement = %+v, %v; want the one record %+v", list, err, second)
	}
}

// testNotFound: an unknown issuer, or no issuer at all, is ErrNotFound;
// any spelling of a known one finds it.
func testNotFound(t *testing.T, r registry.Registry) {
	ctx := context.Background()
	for _, issuer := range []string{"https://none.example", "not an origin", ""} {
		_, err := r.Get(ctx, issuer)
		wantErr(t, "Get("+issuer+")", err, registry.ErrNotFound)
		wantErr(t, "Remove("+issuer+")", r.Remove(ctx, issuer), registry.ErrNotFound)
	}
	stored := put(t, r, school("https://school.example"))
	for _, spelling := range []string{"https://school.example", "HTTPS://School.Example:443/", "https://SCHOOL.example:0443"} {
		if got, err := r.Get(ctx, spelling); err != nil || !sameStored(got, stored) {
			t.Errorf("Get(%s) = %+v, %v; want %+v", spelling, got, err, stored)
		}
	}
	for _, other := range []string{"http://school.example", "https://school.example:8443", "https://www.school.example"} {
		_, err := r.Get(ctx, other)
		wantErr(t, "Get("+other+")", err, registry.ErrNotFound)
	}
	if err := r.Remove(ctx, "HTTPS://School.Example:443"); err != nil {
		t.Fatalf("Remove in another spelling: %v", err)
	}
	_, err := r.Get(ctx, "https://school.example")
	wantErr(t, "Get after Remove", err, registry.ErrNotFound)
	wantErr(t, "second Remove", r.Remove(ctx, "https://school.example"), registry.ErrNotFound)
	wantIssuers(t, r)
}

// testHostTaken: a record naming a host that is another record's (its
// issuer's host or an alias, in any spelling) is refused, naming the host
// and its owner, and nothing is written.
func testHostTaken(t *testing.T, r registry.Registry) {
	ctx := context.Background()
	a := put(t, r, school("https://a.example", "www.a.example"))
	b := put(t, r, school("https://b.example"))
	for _, tt := range []struct {
		name  string
		rec   registry.Record
		host  string
		owner string
	}{
		{"another's alias", school("https://c.example", "WWW.A.example."), "www.a.example", a.Issuer},
		{"an issuer on another's alias", school("https://www.a.example"), "www.a.example", a.Issuer},
		{"another's issuer host as an alias", school("https://c.example", "d.example", "a.example:443"), "a.example", a.Issuer},
		{"another scheme on another's host", school("http://a.example"), "a.example", a.Issuer},
		{"an alias of the other's after a free one", school("https://c.example", "c2.example", "b.example"), "b.example", b.Issuer},
		{"a replacement taking another's alias", school("https://b.example", "www.a.example"), "www.a.example", a.Issuer},
	} {
		_, err := r.Put(ctx, tt.rec)
		var taken *registry.HostTakenError
		if !errors.Is(err, registry.ErrHostTaken) || !errors.As(err, &taken) || taken.Host != tt.host || taken.Owner != tt.owner {
			t.Errorf("%s: Put = %v; want a *HostTakenError of %s owned by %s", tt.name, err, tt.host, tt.owner)
		}
	}
	for _, want := range []registry.Record{a, b} {
		if got, err := r.Get(ctx, want.Issuer); err != nil || !sameStored(got, want) {
			t.Errorf("after the refusals, Get(%s) = %+v, %v; want it unchanged, %+v", want.Issuer, got, err, want)
		}
	}
	wantIssuers(t, r, "https://a.example", "https://b.example")
}

// testReplaceOwnHosts: a replacement may keep, drop and add back its own
// hosts; a dropped host is free for another record.
func testReplaceOwnHosts(t *testing.T, r registry.Registry) {
	for i, hosts := range [][]string{
		{"www.a.example", "a.example:8443"},
		{"a.example:8443", "www.a.example"},
		{"www.a.example"},
		{},
		{"www.a.example", "a.example:8443"},
		{"www.a.example"},
	} {
		got := put(t, r, school("https://a.example", hosts...))
		if got.Version != int64(i+1) || !slices.Equal(got.Hosts, hosts) {
			t.Errorf("write %d: Put = %+v; want version %d, hosts %q", i+1, got, i+1, hosts)
		}
	}
	put(t, r, school("https://c.example", "a.example:8443"))
	_, err := r.Put(context.Background(), school("https://d.example", "www.a.example"))
	wantErr(t, "Put of a kept host", err, registry.ErrHostTaken)
}

// testRemoveFreesHosts: a removed record's hosts, its issuer's included,
// are free.
func testRemoveFreesHosts(t *testing.T, r registry.Registry) {
	put(t, r, school("https://a.example", "www.a.example"))
	if err := r.Remove(context.Background(), "https://a.example"); err != nil {
		t.Fatal(err)
	}
	put(t, r, school("https://b.example", "www.a.example", "a.example"))
	wantIssuers(t, r, "https://b.example")
}

// testCheckRefused: a record that Record.Check refuses is refused with
// Check's error, before the Validator is asked, and nothing is written.
func testCheckRefused(t *testing.T, r registry.Registry) {
	ctx := context.Background()
	for _, rec := range []registry.Record{
		school("https://school.example/path"),
		school("ftp://school.example"),
		school(""),
		school("https://school.example", "www.school.example", "WWW.school.example"),
		school("https://school.example", "school.example:443"),
		school("https://school.example", "a.example/x"),
		{Issuer: "https://school.example"},
		{Issuer: "https://school.example", Config: []byte(`["not", "an", "object"]`)},
		{Issuer: "https://school.example", Config: []byte(`{"unterminated": `)},
	} {
		checked := rec
		checked.Hosts = slices.Clone(rec.Hosts)
		want := checked.Check()
		_, err := r.Put(ctx, rec)
		if want == nil || err == nil || err.Error() != want.Error() {
			t.Errorf("Put(%+v) = %v; want Check's error %v", rec, err, want)
		}
	}
	wantIssuers(t, r)
}

// errRefused is the test Validator's refusal.
var errRefused = errors.New("school_gateway: upstream: refused by the test validator")

// testValidator: the Validator sees the checked record, its error is
// returned as is, and nothing is written then, neither a new record nor
// a replacement.
func testValidator(t *testing.T, open func(t *testing.T, validate registry.Validator) registry.Registry) {
	var mu sync.Mutex
	var seen []string
	r := open(t, func(rec *registry.Record) error {
		mu.Lock()
		seen = append(seen, rec.Issuer)
		mu.Unlock()
		if sameJSON(rec.Config, []byte(`{"refuse": true}`)) {
			return errRefused
		}
		return nil
	})
	ctx := context.Background()
	refused := registry.Record{Issuer: "HTTPS://School.Example", Config: []byte(`{"refuse": true}`)}
	if _, err := r.Put(ctx, refused); err != errRefused {
		t.Errorf("Put of a refused configuration = %v; want the Validator's error as is", err)
	}
	wantIssuers(t, r)
	stored := put(t, r, school("https://school.example"))
	if _, err := r.Put(ctx, refused); err != errRefused {
		t.Errorf("refused replacement: Put = %v; want the Validator's error as is", err)
	}
	if got, err := r.Get(ctx, "https://school.example"); err != nil || !sameStored(got, stored) {
		t.Errorf("after a refused replacement, Get = %+v, %v; want %+v", got, err, stored)
	}
	_, err := r.Put(ctx, school("https://other.example/path"))
	if err == nil || err == errRefused {
		t.Errorf("Put of a record Check refuses = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The Validator may also be asked when a registry reads records
	// written elsewhere; every record it saw was in its one spelling.
	for _, issuer := range seen {
		if issuer != "https://school.example" {
			t.Errorf("the Validator saw issuer %q; want only the checked https://school.example", issuer)
		}
	}
}

// testWatch: every Put and Remove is announced with its issuer.
func testWatch(t *testing.T, r registry.Registry) {
	w := watch(t, r, r)
	put(t, r, school("https://a.example"))
	w.await(t, "https://a.example")
	put(t, r, school("HTTPS://A.example", "www.a.example"))
	w.await(t, "https://a.example")
	put(t, r, school("https://b.example"))
	w.await(t, "https://b.example")
	if err := r.Remove(context.Background(), "https://a.example"); err != nil {
		t.Fatal(err)
	}
	w.await(t, "https://a.example")
}

// testWatchStop: a stopped watcher is called no more, while another
// still is; stopping twice is harmless.
func testWatchStop(t *testing.T, r registry.Registry) {
	stopped := watch(t, r, r)
	live := watch(t, r, r)
	stopped.stop()
	stopped.stop()
	stopped.drain()
	put(t, r, school("https://a.example"))
	live.await(t, "https://a.example")
	if err := r.Remove(context.Background(), "https://a.example"); err != nil {
		t.Fatal(err)
	}
	live.await(t, "https://a.example")
	select {
	case c := <-stopped.ch:
		t.Errorf("a stopped watcher was told of %+v", c)
	default:
	}
}

// testWatchSerial: a watcher's calls never overlap, though the writes
// that cause them do (the watcher's cleanup counts the overlaps).
func testWatchSerial(t *testing.T, r registry.Registry) {
	w := watchSlowly(t, r, r, time.Millisecond)
	issuers := make([]string, 12)
	for i := range issuers {
		issuers[i] = fmt.Sprintf("https://s%d.example", i)
	}
	var wg sync.WaitGroup
	for _, issuer := range issuers {
		wg.Go(func() {
			if _, err := r.Put(context.Background(), school(issuer)); err != nil {
				t.Error(err)
				return
			}
			if err := r.Remove(context.Background(), issuer); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// Each school was written and removed: two changes, which a registry
	// that sees them after the fact may fold into one.
	w.await(t, issuers...)
}

// testCancelledContext: a caller that has given up is refused with the
// context's error, and nothing is written or removed.
func testCancelledContext(t *testing.T, r registry.Registry) {
	stored := put(t, r, school("https://a.example"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.List(ctx)
	wantErr(t, "List", err, context.Canceled)
	_, err = r.Get(ctx, "https://a.example")
	wantErr(t, "Get", err, context.Canceled)
	_, err = r.Put(ctx, school("https://b.example"))
	wantErr(t, "Put", err, context.Canceled)
	_, err = r.Put(ctx, school("https://a.example", "www.a.example"))
	wantErr(t, "replacing Put", err, context.Canceled)
	wantErr(t, "Remove", r.Remove(ctx, "https://a.example"), context.Canceled)
	wantIssuers(t, r, "https://a.example")
	if got, err := r.Get(context.Background(), "https://a.example"); err != nil || !sameStored(got, stored) {
		t.Errorf("Get = %+v, %v; want it unchanged, %+v", got, err, stored)
	}
}
