package catalog

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
)

// ErrNotStored is the store failing to keep a valid feed: the feed is
// fine and the same import may succeed in a moment.
var ErrNotStored = errors.New("storing the catalog failed")

// Persister stores the last good feed so that a restarted gateway serves
// its catalog at once, without waiting for (or depending on) the upstream.
type Persister interface {
	SaveCatalog(context.Context, []byte) error
	// LoadCatalog returns the stored feed, or nil when there is none.
	LoadCatalog(context.Context) ([]byte, error)
}

// Manager owns a site's current catalog. Readers call Current on every
// request, so it is a lock-free atomic load; imports are serialized so that
// what is stored and what is served never disagree.
type Manager struct {
	origin string
	store  Persister
	client *http.Client

	mu  sync.Mutex // serializes LoadPersisted, Import and Refresh writes
	cur atomic.Pointer[Index]
}

// NewManager returns a manager with no catalog. p may be nil to keep the
// catalog in memory only.
func NewManager(origin string, p Persister) *Manager {
	return &Manager{origin: origin, store: p, client: &http.Client{Timeout: fetchTimeout}}
}

// Current returns the catalog being served, or nil before the first one
// is loaded.
func (m *Manager) Current() *Index { return m.cur.Load() }

// LoadPersisted serves the stored feed, if there is one. It does nothing
// when a catalog is already being served, since that one is newer.
func (m *Manager) LoadPersisted(ctx context.Context) error {
	if m.store == nil {
		return nil
	}
	raw, err := m.store.LoadCatalog(ctx)
	if err != nil {
		return fmt.Errorf("reading the stored catalog: %v", err)
	}
	if len(raw) == 0 {
		return nil
	}
	f, err := Parse(raw)
	if err != nil {
		return fmt.Errorf("stored catalog: %v", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur.Load() == nil {
		m.cur.Store(m.index(raw, f))
	}
	return nil
}

// Reload serves the stored feed when it differs from the one served: the
// store is shared, and another instance of the site imported it. It
// reports whether the catalog changed.
func (m *Manager) Reload(ctx context.Context) (bool, error) {
	if m.store == nil {
		return false, nil
	}
	raw, err := m.store.LoadCatalog(ctx)
	if err != nil {
		return false, fmt.Errorf("reading the stored catalog: %v", err)
	}
	if len(raw) == 0 {
		return false, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.cur.Load(); cur != nil && cur.sum == sha256.Sum256(raw) {
		return false, nil
	}
	f, err := Parse(raw)
	if err != nil {
		return false, fmt.Errorf("stored catalog: %v", err)
	}
	m.cur.Store(m.index(raw, f))
	return true, nil
}

// Import validates raw, stores it and then serves it. On any error the
// previous catalog keeps serving and the error says why. Importing the
// bytes already served does nothing, so a periodic refresh of an unchanged
// feed costs no disk write.
func (m *Manager) Import(ctx context.Context, raw []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.cur.Load(); cur != nil && cur.sum == sha256.Sum256(raw) {
		return nil
	}
	f, err := Parse(raw)
	if err != nil {
		return err
	}
	if m.store != nil {
		if err := m.store.SaveCatalog(ctx, raw); err != nil {
			return fmt.Errorf("%w: %v", ErrNotStored, err)
		}
	}
	m.cur.Store(m.index(raw, f))
	return nil
}

// Refresh reads the feed from src, a file path or an http(s) URL, and
// imports it.
func (m *Manager) Refresh(ctx context.Context, src string) error {
	raw, err := m.read(ctx, src)
	if err != nil {
		return err
	}
	return m.Import(ctx, raw)
}

func (m *Manager) index(raw []byte, f *Feed) *Index {
	ix := NewIndex(m.origin, f)
	ix.sum = sha256.Sum256(raw)
	return ix
}
