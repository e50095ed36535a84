package platform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schoolgate/schoolgate/registry"
)

// Watcher is the adapter's side of a registry's watch: the platform's
// schools and table, and its first read of the registry.
type Watcher[S Watched] interface {
	// New is the idle school of rec, which it may keep: a record handed
	// to New is never changed.
	New(rec *registry.Record) S
	// Retire ends old's part in the platform once the table that
	// replaced it serves; removed: its record is gone.
	Retire(old S, removed bool)
	// Table is the table that serves, nil before the registry was read;
	// SetTable makes t the one.
	Table() *Table[S]
	SetTable(t *Table[S])
	// ClaimsChanged tells the config's other platforms of the issuers
	// whose records changed; the watch's lock is held.
	ClaimsChanged(issuers []string)
	// Connect reads the registry for the first time, after a start that
	// could not (Watch.Start).
	Connect() error
}

// WatchConfig is how a Watch reads its registry.
type WatchConfig struct {
	// Life ends with the platform: its reads and retries.
	Life context.Context
	Log  *slog.Logger
	// Name describes the registry in logs, without secrets.
	Name string
	// Timeout bounds one read of the registry.
	Timeout time.Duration
	// First and Last bound the time between two tries of a registry
	// that cannot be read: First, then twice as long each time.
	First, Last time.Duration
	// Schedule runs fn after first, then again after what it returns
	// until that is 0 or ctx ends.
	Schedule func(ctx context.Context, first time.Duration, fn func(context.Context) time.Duration)
}

// Watch keeps a platform's table to its registry: each change the
// registry announces replaces the table whole, one at a time; a change
// that names no record reads the whole registry again; a registry that
// cannot be read is read again later, while the last table serves.
type Watch[S Watched] struct {
	// Mutex orders the table's writers: the first read, the changes,
	// the end, and the adapter's claims between platforms (which take
	// the locks of a config's platforms in rank order).
	sync.Mutex
	to  Watcher[S]
	cfg WatchConfig

	// Under the lock: reg is the registry once read; pending are the
	// changes announced before, applied once it is; ended is set when
	// the platform ends.
	reg     registry.Registry
	pending []registry.Change
	ended   bool
	// covered counts the pending changes announced before the first
	// reading began (Listing): that reading has them.
	covered int

	failure  atomic.Pointer[RegistryFailure]
	retrying atomic.Bool
}

// RegistryFailure is a failed read of the registry.
type RegistryFailure struct {
	Err   error
	Since time.Time
	next  atomic.Int64 // the next try, Unix nanoseconds
}

// Next is when the registry is read again.
func (f *RegistryFailure) Next() time.Time { return time.Unix(0, f.next.Load()).UTC() }

// RetryAfter is the time to the next try, in whole seconds, at least one.
func (f *RegistryFailure) RetryAfter() int {
	return max(int((time.Until(f.Next())+time.Second-1)/time.Second), 1)
}

// NewWatch is the watch of a platform's registry, not read yet.
func NewWatch[S Watched](to Watcher[S], cfg WatchConfig) *Watch[S] {
	return &Watch[S]{to: to, cfg: cfg}
}

// Start makes reg the registry, read into t, and t the table that serves,
// then applies the changes announced meanwhile; false if the platform
// ended. The caller holds the lock.
func (w *Watch[S]) Start(reg registry.Registry, t *Table[S]) bool {
	if w.ended {
		return false
	}
	w.reg = reg
	w.failure.Store(nil)
	w.to.SetTable(t)
	// The changes announced before the reading began are in t: a
	// registry announces a change once it is written, and a change
	// naming none (a listener's reconnection) says only that changes
	// before it may have been missed. At 100,000 schools, applying such
	// a one would read the registry twice at every start.
	pending := w.pending[min(w.covered, len(w.pending)):]
	w.pending, w.covered = nil, 0
	for _, c := range pending {
		w.apply(c)
	}
	return true
}

// Listing notes that the first reading of the registry begins now: the
// changes announced so far are in it, and Start does not apply them
// again. The caller does not hold the lock.
func (w *Watch[S]) Listing() {
	w.Lock()
	defer w.Unlock()
	w.covered = len(w.pending)
}

// End stops applying changes. The caller holds the lock.
func (w *Watch[S]) End() { w.ended = true }

// Ended reports whether the platform ended. The caller holds the lock.
func (w *Watch[S]) Ended() bool { return w.ended }

// Registry is the registry once read, nil before or once ended. The
// caller holds the lock.
func (w *Watch[S]) Registry() registry.Registry {
	if w.ended {
		return nil
	}
	return w.reg
}

// Failure is why the registry could not be read last, nil once it could.
func (w *Watch[S]) Failure() *RegistryFailure { return w.failure.Load() }

// Changed applies a change announced by the registry (one at a time).
func (w *Watch[S]) Changed(c registry.Change) {
	w.Lock()
	defer w.Unlock()
	switch {
	case w.ended:
	case w.to.Table() == nil:
		w.pending = append(w.pending, c)
	default:
		w.apply(c)
	}
}

// apply reads the record a change names and puts it in the table; a
// change that names none reads the whole registry again. The caller
// holds the lock.
func (w *Watch[S]) apply(c registry.Change) {
	if c.Issuer == "" {
		if err := w.resync(); err != nil {
			w.Failed(err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(w.cfg.Life, w.cfg.Timeout)
	defer cancel()
	rec, err := w.reg.Get(ctx, c.Issuer)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		w.SetRecord(c.Issuer, nil)
	case err != nil:
		// The change is not lost: the whole registry is read again
		// once it answers.
		w.Failed(fmt.Errorf("registry: reading %s: %v", c.Issuer, err))
	default:
		w.SetRecord(rec.Issuer, &rec)
	}
}

// SetRecord makes rec the record of issuer (nil: it has none any more),
// in a new table (Replace); the schools it replaced are retired once it
// serves, and serve the requests they have until the last. The caller
// holds the lock.
func (w *Watch[S]) SetRecord(issuer string, rec *registry.Record) {
	t := w.to.Table()
	var zero S
	old := t.School(issuer)
	c, ok := Replace(t, issuer, rec, w.to.New)
	if !ok {
		return
	}
	w.use(c)
	what := "changed"
	switch {
	case rec == nil:
		what = "removed"
	case old == zero:
		what = "added"
	}
	w.cfg.Log.Info("a school of the platform is "+what, "issuer", issuer)
}

// resync reads the whole registry again: the registry may have missed
// changes. Unchanged records keep their school (Resync). The caller
// holds the lock.
func (w *Watch[S]) resync() error {
	ctx, cancel := context.WithTimeout(w.cfg.Life, w.cfg.Timeout)
	defer cancel()
	records, err := w.reg.List(ctx)
	if err != nil {
		return fmt.Errorf("registry: %v", err)
	}
	w.use(Resync(w.to.Table(), records, w.to.New))
	w.failure.Store(nil)
	return nil
}

// use serves the table a change made, retires the schools it replaced,
// and tells the config's other platforms of the issuers it changed. The
// caller holds the lock.
func (w *Watch[S]) use(c Change[S]) {
	w.to.SetTable(c.Next)
	for _, old := range c.Retired {
		w.to.Retire(old, false)
	}
	for _, old := range c.Removed {
		w.to.Retire(old, true)
	}
	w.to.ClaimsChanged(c.Issuers)
}

// Failed records that the registry could not be read and reads it again
// later, from the start if it was never read: schools built keep serving
// meanwhile, and the changes missed are found then.
func (w *Watch[S]) Failed(err error) {
	f := &RegistryFailure{Err: err, Since: time.Now().UTC()}
	f.next.Store(time.Now().Add(w.cfg.First).UnixNano())
	if prev := w.failure.Load(); prev != nil {
		f.Since = prev.Since
		f.next.Store(prev.next.Load())
	}
	w.failure.Store(f)
	if !w.retrying.CompareAndSwap(false, true) {
		return
	}
	delay := w.cfg.First
	w.cfg.Schedule(w.cfg.Life, delay, func(context.Context) time.Duration {
		err := w.Retry()
		if err == nil {
			w.retrying.Store(false)
			return 0
		}
		w.cfg.Log.Warn("the platform's registry still cannot be read; it is tried again later",
			"registry", w.cfg.Name, "error", err)
		delay = min(delay*2, w.cfg.Last)
		if f := w.failure.Load(); f != nil {
			f.next.Store(time.Now().Add(delay).UnixNano())
		}
		return delay
	})
}

// Retry reads the registry again: the first time (Watcher.Connect), or
// after a failure.
func (w *Watch[S]) Retry() error {
	w.Lock()
	connected := w.reg != nil
	w.Unlock()
	if !connected {
		return w.to.Connect()
	}
	w.Lock()
	defer w.Unlock()
	if w.ended {
		return nil
	}
	return w.resync()
}
