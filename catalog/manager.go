package catalog

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
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

	// cold is a manager whose stored feed is read on the first Current
	// (LoadLazily): a school nobody asks about keeps no index in memory.
	cold atomic.Bool
	// storedSum is the hash of the stored feed while cold, so that a
	// refresh of an unchanged feed neither parses nor indexes it.
	storedSum   [32]byte
	storedKnown bool
	// courses is the number of courses of the newest feed seen, -1 when
	// none has been read yet.
	courses atomic.Int64
	// loadErr is why the last lazy load failed, if it did.
	loadErr atomic.Pointer[string]
	// firstImport is closed once the first import of a configured feed
	// has been tried (ExpectImport); nil when none is awaited.
	firstImport atomic.Pointer[chan struct{}]
}

// fetchTimeout bounds a feed download (internal/source bounds it too).
const fetchTimeout = 15 * time.Second

// NewManager returns a manager with no catalog. p may be nil to keep the
// catalog in memory only.
func NewManager(origin string, p Persister) *Manager {
	m := &Manager{origin: origin, store: p, client: &http.Client{Timeout: fetchTimeout}}
	m.courses.Store(-1)
	return m
}

// Current returns the catalog being served, or nil before the first one
// is loaded. A cold manager loads the stored feed on this first call.
func (m *Manager) Current() *Index {
	if ix := m.cur.Load(); ix != nil || !m.cold.Load() {
		return ix
	}
	return m.warm()
}

// Loaded returns the catalog being served without loading a cold one:
// for status pages, which must not make every school's index resident.
func (m *Manager) Loaded() *Index { return m.cur.Load() }

// Courses is the number of courses of the newest feed read, -1 when no
// feed has been read yet (a cold manager before its first use).
func (m *Manager) Courses() int { return int(m.courses.Load()) }

// Cold reports whether the stored feed has not been read yet.
func (m *Manager) Cold() bool { return m.cold.Load() }

// LoadError is why the last lazy load of the stored feed failed, or "".
func (m *Manager) LoadError() string {
	if e := m.loadErr.Load(); e != nil {
		return *e
	}
	return ""
}

// LoadLazily defers reading the stored feed to the first Current.
func (m *Manager) LoadLazily() {
	if m.store != nil {
		m.cold.Store(true)
	}
}

// ExpectImport tells the manager that a feed source is configured and
// its first import is about to run: until it has been tried, Await waits
// for it instead of answering that there is no catalog. A gateway started
// on an empty store thus answers its first searches once the feed is in,
// not with an error for the second or so the import takes.
func (m *Manager) ExpectImport() {
	ch := make(chan struct{})
	m.firstImport.Store(&ch)
}

// importTried ends the wait for the first import, whatever its outcome.
func (m *Manager) importTried() {
	if ch := m.firstImport.Swap(nil); ch != nil {
		close(*ch)
	}
}

// FirstImport returns a channel closed once the first import of an
// expected feed has been tried, whatever its outcome; nil when none is
// awaited (none was expected, or it has been tried).
func (m *Manager) FirstImport() <-chan struct{} {
	if ch := m.firstImport.Load(); ch != nil {
		return *ch
	}
	return nil
}

// Await returns the catalog like Current. While there is none and the
// first import of an expected feed has not been tried yet, it waits for
// that import, for at most max or until ctx ends, and returns what the
// import brought (nil if it failed).
func (m *Manager) Await(ctx context.Context, max time.Duration) *Index {
	if ix := m.Current(); ix != nil {
		return ix
	}
	ch := m.firstImport.Load()
	if ch == nil {
		return nil
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-*ch:
	case <-t.C:
	case <-ctx.Done():
	}
	return m.Current()
}

// lazyLoadTimeout bounds the store read of a first Current, which runs
// on behalf of a request.
const lazyLoadTimeout = 5 * time.Second

// warm reads the stored feed of a cold manager. A store that fails to
// answer leaves it cold, so that the next request tries again; a stored
// feed that does not parse is given up on until the next import.
func (m *Manager) warm() *Index {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.cold.Load() {
		return m.cur.Load()
	}
	ctx, cancel := context.WithTimeout(context.Background(), lazyLoadTimeout)
	defer cancel()
	raw, err := m.store.LoadCatalog(ctx)
	if err != nil {
		m.setLoadErr(fmt.Sprintf("reading the stored catalog: %v", err))
		return nil
	}
	// The index is published before the manager stops being cold, so
	// that a concurrent Current never sees neither.
	defer m.cold.Store(false)
	if len(raw) == 0 {
		m.setLoadErr("")
		return nil
	}
	f, err := Parse(raw)
	if err != nil {
		m.setLoadErr(fmt.Sprintf("stored catalog: %v", err))
		return nil
	}
	m.setLoadErr("")
	ix := m.index(raw, f)
	m.cur.Store(ix)
	return ix
}

func (m *Manager) setLoadErr(msg string) {
	if msg == "" {
		m.loadErr.Store(nil)
		return
	}
	m.loadErr.Store(&msg)
}

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
	defer m.importTried() // another instance's import serves here too
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cold.Load() {
		// Nothing is served yet: the first use reads the new feed.
		m.storedSum, m.storedKnown = sha256.Sum256(raw), true
		return false, nil
	}
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
	defer m.importTried()
	m.mu.Lock()
	defer m.mu.Unlock()
	sum := sha256.Sum256(raw)
	if cur := m.cur.Load(); cur != nil && cur.sum == sum {
		return nil
	}
	cold := m.cold.Load()
	if cold && m.storedFeedIs(ctx, sum) {
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
	m.courses.Store(int64(len(f.Courses)))
	if cold {
		// Stored for the first use to read; nobody is served from it yet.
		m.storedSum, m.storedKnown = sum, true
		m.setLoadErr("")
		return nil
	}
	m.cur.Store(m.index(raw, f))
	return nil
}

// HasStoredFeed reports whether a feed is there to serve, without
// parsing one nobody has asked for: the store is read only while the
// manager has not learnt it yet (a refresh or an import teaches it).
func (m *Manager) HasStoredFeed(ctx context.Context) (bool, error) {
	if m.cur.Load() != nil {
		return true, nil
	}
	if m.store == nil {
		return false, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.storedKnown {
		raw, err := m.store.LoadCatalog(ctx)
		if err != nil {
			return false, err
		}
		m.storedSum, m.storedKnown = sha256.Sum256(raw), true
	}
	return m.storedSum != noFeed, nil
}

// noFeed is the hash of an empty store's feed.
var noFeed = sha256.Sum256(nil)

// storedFeedIs reports whether the stored feed hashes to sum, reading it
// once per cold spell; a store that fails to answer says no, and the
// import goes on to store the feed (or fail saying why).
func (m *Manager) storedFeedIs(ctx context.Context, sum [32]byte) bool {
	if !m.storedKnown {
		raw, err := m.store.LoadCatalog(ctx)
		if err != nil {
			return false
		}
		m.storedSum, m.storedKnown = sha256.Sum256(raw), true
	}
	return m.storedSum == sum
}

// Refresh reads the feed from src, a file path or an http(s) URL, and
// imports it.
func (m *Manager) Refresh(ctx context.Context, src string) error {
	defer m.importTried()
	raw, err := m.read(ctx, src)
	if err != nil {
		return err
	}
	return m.Import(ctx, raw)
}

func (m *Manager) index(raw []byte, f *Feed) *Index {
	m.courses.Store(int64(len(f.Courses)))
	ix := NewIndex(m.origin, f)
	ix.sum = sha256.Sum256(raw)
	return ix
}
