package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/store"
)

// pollEvery is how often an instance compares each site's version row
// with the last it saw: the safety net under notifications, which a
// dropped connection loses. A variable so tests can shorten it.
var pollEvery = 30 * time.Second

// relistenMax caps the pause between attempts to listen again.
const relistenMax = 5 * time.Second

// hub delivers the changes announced on notifyChannel to the watchers of
// this process's sites, and those announced on registryChannel to the
// watchers of the school registry (registry.go). A pool has one: it
// listens on one connection taken out of the pool for good (hijacked), so
// listening never holds back the pool's connections, and the budget is N
// instances × (pool + 1).
type hub struct {
	db *pgxpool.Pool

	mu       sync.Mutex
	watchers map[int64]map[int]func(store.Change) // site id → watcher
	// versions is the last version seen of each watched site, and of no
	// other: a platform that opens and lets go of schools for weeks,
	// among a database's thousands, keeps as many as it holds now.
	versions map[int64]int64
	schools  schoolWatchers // the registry's (registry.go)
	next     int
	cancel   context.CancelFunc // nil until the first watcher starts the hub
	done     chan struct{}

	// deliver serializes the calls of watchers: Watcher promises one
	// goroutine at a time, and the listener and the poll both deliver.
	deliver sync.Mutex

	// listening is closed once the hub first listened and told its
	// watchers so (listen).
	listening     chan struct{}
	listeningOnce sync.Once
}

func newHub(db *pgxpool.Pool) *hub {
	return &hub{db: db, watchers: map[int64]map[int]func(store.Change){}, versions: map[int64]int64{},
		listening: make(chan struct{})}
}

// Watch implements store.Watcher. A change made since the site was
// opened that the hub did not see (it was made while no one watched the
// site) is found by the next poll, which tells fn to refresh everything:
// what the holder read of the site may be older than it.
func (s *Site) Watch(fn func(store.Change)) (stop func()) {
	return s.pool.hub.add(s.id, s.opened, fn)
}

var _ store.Watcher = (*Site)(nil)

// add registers fn for site, starting the hub with its first watcher.
// The first watcher of a site starts its version at opened, the site's
// version before its holder read anything of it: the hub keeps none
// while no one watches the site, so a change made meanwhile moves the
// version past it, and the next poll tells the watcher. A later watcher
// finds the version the others were told of, which never goes back: if
// it is past opened, changes were told before fn was there, and fn is
// told to refresh everything.
func (h *hub) add(site, opened int64, fn func(store.Change)) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watchers[site] == nil {
		h.watchers[site] = map[int]func(store.Change){}
		h.versions[site] = opened
	} else if opened < h.versions[site] {
		go func() {
			h.deliver.Lock()
			defer h.deliver.Unlock()
			fn(store.ChangeAll)
		}()
	}
	h.next++
	id := h.next
	h.watchers[site][id] = fn
	h.start()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.watchers[site], id)
			if len(h.watchers[site]) == 0 {
				delete(h.watchers, site)
				delete(h.versions, site)
			}
			h.mu.Unlock()
		})
	}
}

// start starts listening and polling, once; the caller holds h.mu.
func (h *hub) start() {
	if h.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel, h.done = cancel, make(chan struct{})
		go h.run(ctx)
	}
}

// close stops listening and polling; the pool closes after it.
func (h *hub) close() {
	h.mu.Lock()
	cancel, done := h.cancel, h.done
	h.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// run listens and polls until ctx ends.
func (h *hub) run(ctx context.Context) {
	polled := make(chan struct{})
	defer func() {
		<-polled
		close(h.done)
	}()
	go func() {
		defer close(polled)
		h.poll(ctx)
	}()
	pause := 50 * time.Millisecond
	for ctx.Err() == nil {
		listened := h.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		if listened {
			pause = 50 * time.Millisecond
		}
		if !sleep(ctx, pause) {
			return
		}
		pause = min(2*pause, relistenMax)
	}
}

// listen opens a listening connection and delivers what arrives on it
// until it fails. Whatever was announced while no connection listened is
// lost, so every (re)connection first tells every watcher to refresh
// everything. It reports whether it got as far as listening.
func (h *hub) listen(ctx context.Context) bool {
	conn, err := h.connect(ctx)
	if err != nil {
		return false
	}
	defer conn.Close(context.Background())
	h.broadcast(store.ChangeAll)
	h.sendSchools(registry.Change{})
	h.listeningOnce.Do(func() { close(h.listening) })
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true
		}
		if n.Channel == registryChannel {
			h.schoolNotice(n.Payload)
			continue
		}
		site, change, version, err := parseNotice(n.Payload)
		if err != nil {
			continue
		}
		h.mu.Lock()
		// A site no one here watches is another instance's: its version
		// is not kept.
		if seen, watched := h.versions[site]; watched && version > seen {
			h.versions[site] = version
		}
		h.mu.Unlock()
		h.send(site, change)
	}
}

// connect takes a connection out of the pool and listens on it, to the
// sites' channel and the registry's.
func (h *hub) connect(ctx context.Context) (*pgx.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	pc, err := h.db.Acquire(actx)
	if err != nil {
		return nil, err
	}
	conn := pc.Hijack()
	for _, channel := range []string{notifyChannel, registryChannel} {
		if _, err := conn.Exec(actx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
			conn.Close(context.Background())
			return nil, err
		}
	}
	return conn, nil
}

// poll compares each watched site's version, and the registry's, with the
// last seen, every pollEvery, and tells the watchers of what moved to
// refresh everything: the change came while notifications were not
// arriving.
func (h *hub) poll(ctx context.Context) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, site := range h.stale(ctx) {
			h.send(site, store.ChangeAll)
		}
		if h.staleSchools(ctx) {
			h.sendSchools(registry.Change{})
		}
	}
}

// stale returns the watched sites whose version moved past the last seen.
func (h *hub) stale(ctx context.Context) []int64 {
	h.mu.Lock()
	ids := make([]int64, 0, len(h.watchers))
	for id := range h.watchers {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	qctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	rows, err := h.db.Query(qctx, `SELECT id, version FROM sites WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var moved []int64
	h.mu.Lock()
	defer h.mu.Unlock()
	for rows.Next() {
		var id, v int64
		if rows.Scan(&id, &v) != nil {
			return moved
		}
		// A site let go of since the query began is not kept again, and
		// a version the listener saw past this read stays.
		if seen, watched := h.versions[id]; watched && v > seen {
			h.versions[id] = v
			moved = append(moved, id)
		}
	}
	return moved
}

// send delivers c to the watchers of one site.
func (h *hub) send(site int64, c store.Change) {
	h.mu.Lock()
	fns := make([]func(store.Change), 0, len(h.watchers[site]))
	for _, fn := range h.watchers[site] {
		fns = append(fns, fn)
	}
	h.mu.Unlock()
	h.deliver.Lock()
	defer h.deliver.Unlock()
	for _, fn := range fns {
		fn(c)
	}
}

// broadcast delivers c to the watchers of every site.
func (h *hub) broadcast(c store.Change) {
	h.mu.Lock()
	ids := make([]int64, 0, len(h.watchers))
	for id := range h.watchers {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.send(id, c)
	}
}
