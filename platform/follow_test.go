package platform

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/registry"
)

// fakePlatform is a Watcher: a table, the schools it retired, the
// issuers it was told of, and a registry that may be down.
type fakePlatform struct {
	reg     *registry.Memory
	down    bool
	table   *Table[*watchedSchool]
	retired []string
	removed []string
	claims  []string
	w       *Watch[*watchedSchool]
	// lists counts the readings of the whole registry after the first.
	lists int
	// scheduled is the retry the watch scheduled, run by the test.
	scheduled func(context.Context) time.Duration
}

func (p *fakePlatform) New(rec *registry.Record) *watchedSchool { return watchedOf(rec) }
func (p *fakePlatform) Retire(old *watchedSchool, removed bool) {
	if removed {
		p.removed = append(p.removed, old.rec.Issuer)
	} else {
		p.retired = append(p.retired, old.rec.Issuer)
	}
}
func (p *fakePlatform) Table() *Table[*watchedSchool]     { return p.table }
func (p *fakePlatform) SetTable(t *Table[*watchedSchool]) { p.table = t }
func (p *fakePlatform) ClaimsChanged(issuers []string)    { p.claims = append(p.claims, issuers...) }

// Connect reads the registry into the first table, as the adapter does.
func (p *fakePlatform) Connect() error {
	if p.down {
		return errors.New("registry down")
	}
	records, err := p.reg.List(context.Background())
	if err != nil {
		return err
	}
	t := NewTable[*watchedSchool](len(records))
	for _, rec := range records {
		t.Add(newWatched(rec))
	}
	p.w.Lock()
	defer p.w.Unlock()
	if !p.w.Start(registryOf{p}, t) {
		return errors.New("ended")
	}
	return nil
}

// registryOf is the fake platform's registry, down when it is.
type registryOf struct{ p *fakePlatform }

func (r registryOf) List(ctx context.Context) ([]registry.Record, error) {
	r.p.lists++
	if r.p.down {
		return nil, errors.New("registry down")
	}
	return r.p.reg.List(ctx)
}
func (r registryOf) Get(ctx context.Context, issuer string) (registry.Record, error) {
	if r.p.down {
		return registry.Record{}, errors.New("registry down")
	}
	return r.p.reg.Get(ctx, issuer)
}
func (r registryOf) Put(ctx context.Context, rec registry.Record) (registry.Record, error) {
	return r.p.reg.Put(ctx, rec)
}
func (r registryOf) Remove(ctx context.Context, issuer string) error {
	return r.p.reg.Remove(ctx, issuer)
}
func (r registryOf) Watch(fn func(registry.Change)) func() { return r.p.reg.Watch(fn) }
func (r registryOf) Close() error                          { return nil }

func newFakePlatform(t *testing.T) *fakePlatform {
	p := &fakePlatform{reg: registry.NewMemory(nil)}
	var mu sync.Mutex
	p.w = NewWatch[*watchedSchool](p, WatchConfig{Life: t.Context(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Name: "memory", Timeout: time.Second, First: 5 * time.Second, Last: time.Minute,
		Schedule: func(_ context.Context, _ time.Duration, fn func(context.Context) time.Duration) {
			mu.Lock()
			p.scheduled = fn
			mu.Unlock()
		}})
	return p
}

func (p *fakePlatform) put(t *testing.T, issuer, cfg string) {
	t.Helper()
	if _, err := p.reg.Put(t.Context(), record(issuer, cfg)); err != nil {
		t.Fatal(err)
	}
}

// Changes announced before the first read wait for it; each change
// after replaces the table; a registry that cannot be read is recorded,
// retried on schedule, and the change missed meanwhile read then.
func TestWatch(t *testing.T) {
	p := newFakePlatform(t)
	p.put(t, "https://a.example", `{}`)
	p.w.Changed(registry.Change{Issuer: "https://a.example"}) // before the first read: pending
	p.down = true
	if err := p.w.Retry(); err == nil {
		t.Fatal("a registry down was read")
	}
	p.w.Failed(errors.New("registry down"))
	if f := p.w.Failure(); f == nil || f.RetryAfter() < 1 || p.scheduled == nil {
		t.Fatalf("the failure is not recorded, or no retry scheduled: %+v", f)
	}
	p.down = false
	if next := p.scheduled(t.Context()); next != 0 {
		t.Fatalf("the retry of a registry back asks to run again in %v", next)
	}
	if p.w.Failure() != nil || p.table.School("https://a.example") == nil {
		t.Fatal("the registry back is not read")
	}

	// A change: the table replaced, the old school retired.
	old := p.table.School("https://a.example")
	p.put(t, "https://a.example", `{"code_ttl":"1m"}`)
	p.w.Changed(registry.Change{Issuer: "https://a.example"})
	if p.table.School("https://a.example") == old || !slices.Equal(p.retired, []string{"https://a.example"}) {
		t.Fatalf("a change: retired %v", p.retired)
	}

	// Down: a change announced is not read, the failure is recorded;
	// back: the whole registry is read again and finds it.
	p.down = true
	p.put(t, "https://b.example", `{}`)
	p.w.Changed(registry.Change{Issuer: "https://b.example"})
	if p.w.Failure() == nil || p.table.School("https://b.example") != nil {
		t.Fatal("a change that could not be read")
	}
	p.down = false
	if err := p.w.Retry(); err != nil || p.table.School("https://b.example") == nil || p.w.Failure() != nil {
		t.Fatalf("the change missed is not read once the registry is back: %v", err)
	}
	if err := p.reg.Remove(t.Context(), "https://b.example"); err != nil {
		t.Fatal(err)
	}
	p.w.Changed(registry.Change{Issuer: "https://b.example"})
	if !slices.Equal(p.removed, []string{"https://b.example"}) {
		t.Fatalf("removed %v", p.removed)
	}
	if !slices.Contains(p.claims, "https://b.example") {
		t.Fatalf("the other platforms were not told: %v", p.claims)
	}

	// Ended: changes are no longer applied, the registry not handed out.
	p.w.Lock()
	p.w.End()
	reg := p.w.Registry()
	p.w.Unlock()
	p.put(t, "https://c.example", `{}`)
	p.w.Changed(registry.Change{Issuer: "https://c.example"})
	if reg != nil || p.table.School("https://c.example") != nil {
		t.Fatal("a change applied after the end")
	}
}

// The changes announced before the first reading began are in it, and
// are not applied again (a change naming none would read the whole
// registry a second time); those announced after are.
func TestWatchStartSkipsChangesListed(t *testing.T) {
	p := newFakePlatform(t)
	p.put(t, "https://a.example", `{}`)
	p.w.Changed(registry.Change{}) // a listener connected: read everything
	p.w.Changed(registry.Change{Issuer: "https://a.example"})
	p.w.Listing()
	records, err := p.reg.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	p.put(t, "https://b.example", `{}`) // written after the reading began
	p.w.Changed(registry.Change{Issuer: "https://b.example"})
	tbl := NewTable[*watchedSchool](len(records))
	for _, rec := range records {
		tbl.Add(newWatched(rec))
	}
	p.w.Lock()
	p.w.Start(registryOf{p}, tbl)
	p.w.Unlock()
	if p.lists != 0 {
		t.Errorf("the registry was read whole %d times more after the start", p.lists)
	}
	if p.table.School("https://a.example") == nil || p.table.School("https://b.example") == nil {
		t.Error("a school is missing after the start")
	}
	if len(p.retired) != 0 {
		t.Errorf("schools replaced at the start: %v", p.retired)
	}
}
