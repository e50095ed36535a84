package registry

import (
	"context"
	"sync"
	"time"

	"github.com/schoolgate/schoolgate/policy"
)

// Memory is a Registry held in memory, for tests and for a platform
// whose schools are given at start; it is the contract's plainest form.
type Memory struct {
	validate Validator
	mu       sync.Mutex
	records  map[string]Record // by issuer
	owners   map[string]string // host key → issuer
	watchers map[int]func(Change)
	next     int
	// notify makes the watchers' calls one at a time.
	notify sync.Mutex
}

// NewMemory returns an empty registry that checks records with validate
// (nil checks nothing beyond Record.Check).
func NewMemory(validate Validator) *Memory {
	return &Memory{validate: validate, records: map[string]Record{}, owners: map[string]string{},
		watchers: map[int]func(Change){}}
}

// List implements Registry.
func (m *Memory) List(ctx context.Context) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Record, 0, len(m.records))
	for _, r := range m.records {
		out = append(out, r)
	}
	return out, nil
}

// Get implements Registry.
func (m *Memory) Get(ctx context.Context, issuer string) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	key, err := policy.ParseOrigin(issuer)
	if err != nil {
		return Record{}, ErrNotFound
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[key]
	if !ok {
		return Record{}, ErrNotFound
	}
	return r, nil
}

// Put implements Registry.
func (m *Memory) Put(ctx context.Context, r Record) (Record, error) {
	return m.put(ctx, r, nil)
}

// PutIf implements Conditional.
func (m *Memory) PutIf(ctx context.Context, r Record, version int64) (Record, error) {
	return m.put(ctx, r, &version)
}

// put is Put, on condition of the stored version when version is set.
func (m *Memory) put(ctx context.Context, r Record, version *int64) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	r.Hosts = append([]string(nil), r.Hosts...)
	if err := r.Check(); err != nil {
		return Record{}, err
	}
	if m.validate != nil {
		if err := m.validate(&r); err != nil {
			return Record{}, err
		}
	}
	m.mu.Lock()
	if version != nil {
		old, ok := m.records[r.Issuer]
		if err := checkVersion(r.Issuer, *version, old.Version, ok); err != nil {
			m.mu.Unlock()
			return Record{}, err
		}
	}
	for _, h := range r.HostKeys() {
		if owner, ok := m.owners[h]; ok && owner != r.Issuer {
			m.mu.Unlock()
			return Record{}, &HostTakenError{Host: h, Owner: owner}
		}
	}
	if old, ok := m.records[r.Issuer]; ok {
		r.Version = old.Version + 1
		m.forget(old)
	} else {
		r.Version = 1
	}
	r.UpdatedAt = time.Now().UTC()
	m.records[r.Issuer] = r
	for _, h := range r.HostKeys() {
		m.owners[h] = r.Issuer
	}
	m.mu.Unlock()
	m.announce(r.Issuer)
	return r, nil
}

// Remove implements Registry.
func (m *Memory) Remove(ctx context.Context, issuer string) error {
	return m.remove(ctx, issuer, nil)
}

// RemoveIf implements Conditional.
func (m *Memory) RemoveIf(ctx context.Context, issuer string, version int64) error {
	return m.remove(ctx, issuer, &version)
}

// remove is Remove, on condition of the stored version when version is
// set.
func (m *Memory) remove(ctx context.Context, issuer string, version *int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	key, err := policy.ParseOrigin(issuer)
	if err != nil {
		return ErrNotFound
	}
	m.mu.Lock()
	r, ok := m.records[key]
	if ok && version != nil {
		if err := checkVersion(key, *version, r.Version, true); err != nil {
			m.mu.Unlock()
			return err
		}
	}
	if ok {
		m.forget(r)
		delete(m.records, key)
	}
	m.mu.Unlock()
	if !ok {
		return ErrNotFound
	}
	m.announce(key)
	return nil
}

// forget drops r's hosts; the caller holds mu.
func (m *Memory) forget(r Record) {
	for _, h := range r.HostKeys() {
		delete(m.owners, h)
	}
}

// Watch implements Registry.
func (m *Memory) Watch(fn func(Change)) (stop func()) {
	m.mu.Lock()
	id := m.next
	m.next++
	m.watchers[id] = fn
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		delete(m.watchers, id)
		m.mu.Unlock()
	}
}

// announce tells the watchers, one call at a time.
func (m *Memory) announce(issuer string) {
	m.mu.Lock()
	fns := make([]func(Change), 0, len(m.watchers))
	for _, fn := range m.watchers {
		fns = append(fns, fn)
	}
	m.mu.Unlock()
	m.notify.Lock()
	defer m.notify.Unlock()
	for _, fn := range fns {
		fn(Change{Issuer: issuer})
	}
}

// Close implements Registry.
func (m *Memory) Close() error { return nil }

var (
	_ Registry    = (*Memory)(nil)
	_ Conditional = (*Memory)(nil)
)
