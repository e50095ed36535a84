// Package admission shares one gateway instance between the schools it
// serves (docs/operator.md, "Fair share and budgets").
//
// A Gate has slots, by default one per processor Go may use. A request
// takes a slot of its school's handle (School) once its route is known
// and gives it back when the gateway's own work for it is done, before
// the legacy server is asked; it gives it back too while it waits on I/O
// (Slot.Pause: the store's commits and queries, calls to the legacy
// server, the fetch of a client's metadata document). While the gate sees one school only, nothing is counted: a
// lone school has the whole instance, at the cost of a clock reading.
// Once a second school is asked, the instance is shared:
//
//   - a request counts for its school from the moment it takes a slot
//     until the HTTP work around it is done: its time in the gateway's
//     code, then the overhead the process spends on a request outside it
//     (reading and routing it, writing the answer, proxying), measured
//     from the process's CPU time (overhead.go). What a school has under
//     way so stands for processor time, whether its requests spend it in
//     the gateway's code (a search) or in the HTTP server (a discovery
//     document);
//   - what a store spent on a request's behalf while it waited (a group
//     commit's leader runs every write of its group; a database on the
//     same machine works for it) is charged to it (Slot.Charge), and its
//     slot counts that much longer when given back;
//   - a school has at most all slots but one under way while another
//     school holds or waits for one, or was asked in the last presentFor:
//     a flood is held to its share, and a school asking while a neighbour
//     floods finds a slot at once;
//   - when no slot is free, or its school has its most under way, a
//     request waits in its school's own short queue, and each slot freed
//     goes to the waiting school with the fewest under way for its
//     weight, and among equals to the one that has had the least
//     processor time for its weight (fair queueing: each slot is charged
//     the time it was held and the work around it);
//   - while another school is present, the time a request counts for is
//     scaled by the processors Go may use over those the machine's other
//     processes leave (capacity.go);
//   - a request that finds its school's queue full, or waits past the
//     bound while its school has its share of the slots under way (or
//     past hardWaits bounds in any case), is refused with a Refusal that
//     says when to retry;
//   - a request resuming after a pause waits at the front of its
//     school's queue, within the same hardWaits bounds in all, and then
//     goes on without a slot: no request waits longer than that.
//
// Why not a plain concurrency limit: measured in front of a flood, the
// requests in the gateway's code at once never exceeded the processors (a
// goroutine runs a short request from start to end), so a limit at or
// above them never filled and changed nothing; the queueing that starves
// a neighbour happens in the HTTP server and the scheduler, before the
// gateway's code. Counting the work around a request holds a flood of
// cheap requests to its share too.
//
// The package knows nothing of HTTP or Caddy: school asks it, caddymodule
// owns the one Gate of the process and configures it.
package admission

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Gate. Zero values are the defaults.
type Options struct {
	// Off admits every request at once, uncounted.
	Off bool
	// Concurrency is the number of slots. Default: DefaultConcurrency().
	Concurrency int
	// Queue is how many requests of one school may wait for a slot;
	// more are refused at once. Default: DefaultQueue.
	Queue int
	// Wait is how long a request waits for a slot before it is refused,
	// if its school has its share of the slots under way; one whose
	// school has less waits up to hardWaits times as long. Default:
	// DefaultWait.
	Wait time.Duration
}

// Defaults, chosen from measurements (docs/operator.md, "Fair share and
// budgets").
const (
	// DefaultQueue lets a school's burst wait rather than be refused: a
	// waiting request costs the instance nothing until its turn, a
	// refused one is sent again at once by most clients.
	DefaultQueue = 128
	// DefaultWait bounds a request's wait for its school's turn.
	DefaultWait = time.Second
	// sharedFor is how long the instance counts as shared after a
	// second school was last asked.
	sharedFor = time.Second
)

// DefaultConcurrency is the default number of slots: one per processor Go
// may use. The slots stand for the processors (see the package comment).
func DefaultConcurrency() int { return runtime.GOMAXPROCS(0) }

// settings are the options in effect, replaced whole by Configure.
type settings struct {
	off   bool
	slots int64
	queue int
	wait  time.Duration
}

func (o Options) settings() *settings {
	s := &settings{off: o.Off, slots: int64(o.Concurrency), queue: o.Queue, wait: o.Wait}
	if s.slots <= 0 {
		s.slots = int64(DefaultConcurrency())
	}
	if s.queue <= 0 {
		s.queue = DefaultQueue
	}
	if s.wait <= 0 {
		s.wait = DefaultWait
	}
	return s
}

// Gate is an instance's slots, shared by every school's handle. Use
// NewGate.
type Gate struct {
	cfg atomic.Pointer[settings]
	// used is the slots held; queued the requests waiting, every school
	// together. While queued is zero a request
	// takes a free slot without the lock; once one waits, every
	// admission goes through mu, so that a freed slot goes to the
	// fairest school and no newcomer takes it first.
	used   atomic.Int64
	queued atomic.Int64
	// last is the school last admitted and sharedAt when another school
	// than the one before was (nanoseconds on the gate's clock).
	last     atomic.Pointer[School]
	sharedAt atomic.Int64
	// cost measures the HTTP work around a request (overhead.go).
	cost overhead
	// sharedFor is how long the instance counts as shared after a second
	// school was asked: sharedFor, but in tests.
	sharedFor int64

	mu sync.Mutex
	// waiting are the schools with a request waiting; seq orders the
	// waiters, oldest first, across schools; pass is the pass of the
	// school last handed a slot.
	waiting []*School
	seq     uint64
	pass    uint64
	// cooling are the slots given back while the instance is shared,
	// still their schools' until their time, the first to end on top.
	cooling coolingHeap
	// timer ends the cooling of requests for their schools' waiters
	// when no release comes first.
	timer   *time.Timer
	timerAt int64
}

// NewGate returns a gate with the options.
func NewGate(o Options) *Gate {
	g := new(Gate)
	g.cfg.Store(o.settings())
	t := now()
	g.sharedFor = int64(sharedFor)
	g.sharedAt.Store(t - g.sharedFor)
	g.cost.init(t)
	return g
}

// Configure replaces the options. Requests in flight keep their slots;
// with fewer slots than are taken, none is handed out until enough are
// given back.
func (g *Gate) Configure(o Options) {
	g.cfg.Store(o.settings())
	g.mu.Lock()
	g.expire(now())
	g.dispatch(g.cfg.Load())
	g.mu.Unlock()
}

// InFlight is how many slots are taken now.
func (g *Gate) InFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expire(now())
	return int(g.used.Load())
}

// Waiting is how many requests wait for a slot now.
func (g *Gate) Waiting() int { return int(g.queued.Load()) }

// Overhead is the HTTP work around a request as last measured: how long
// a request still counts for its school after it gives its slot back,
// while the instance is shared.
func (g *Gate) Overhead() time.Duration { return time.Duration(g.cost.ns.Load()) }

// School returns a school's handle with its weight (at least 1). The
// gate keeps a handle only while its requests wait or cool, so a school
// let go of needs no unregistering.
func (g *Gate) School(weight int) *School {
	return &School{gate: g, weight: uint64(max(weight, 1))}
}

// epoch is the gate's clock's origin: now is monotonic nanoseconds.
var epoch = time.Now()

func now() int64 { return int64(time.Since(epoch)) }

// shared reports whether two schools were admitted lately.
func (g *Gate) shared(t int64) bool { return t-g.sharedAt.Load() < g.sharedFor }

// noteSchool records which school is admitted, and when the instance
// became shared.
func (g *Gate) noteSchool(s *School, t int64) {
	if last := g.last.Load(); last != s {
		g.last.Store(s)
		if last != nil {
			g.sharedAt.Store(t)
		}
	}
}

// capFor is how many requests s may have under way at t while the
// instance is shared: all slots but one while another school holds or
// waits for one or was asked lately (within presentFor), so that a school
// asking while another holds the rest finds one free at once rather than
// waiting for a turn; all of them otherwise, so that a school asking alone
// for a moment (its neighbours quiet, or their requests gone to their
// legacy servers) has the processors.
func (g *Gate) capFor(s *School, slots int64, othersWait bool, t int64) int64 {
	if slots > 1 && (othersWait || g.othersPresent(s, t)) {
		return slots - 1
	}
	return slots
}

// othersPresent reports whether a school other than s holds a slot or
// was asked within presentFor.
func (g *Gate) othersPresent(s *School, t int64) bool {
	return g.used.Load()-s.inflight.Load() > 0 || t-g.sharedAt.Load() < int64(presentFor)
}

// presentFor is how long a school asked counts as present for capFor:
// one asking steadily is present throughout; one asking now and then
// leaves the others the whole instance between its requests.
const presentFor = 20 * time.Millisecond

// tryTake takes a free slot for s at t without the lock, when nobody
// waits.
func (g *Gate) tryTake(s *School, slots, t int64) bool {
	if g.queued.Load() != 0 || s.inflight.Load() >= g.capFor(s, slots, false, t) {
		return false
	}
	if g.used.Add(1) <= slots {
		return true
	}
	g.used.Add(-1)
	return false
}

// takeLocked takes a free slot under mu; false when all are taken.
func (g *Gate) takeLocked(slots int64) bool {
	for u := g.used.Load(); u < slots; u = g.used.Load() {
		if g.used.CompareAndSwap(u, u+1) {
			return true
		}
	}
	return false
}

// dispatch hands free slots to waiters, under mu: each to the head of
// the waiting school with the fewest slots for its weight, the one served
// least lately among equals, none beyond its cap (capFor) — unless every
// waiting school has its most under way and more than one waits: the
// slot the caps keep free is for a school that comes to ask, and here the
// schools asking are waiting already, so the fairest of them takes it
// rather than it staying idle until a slot cools (a flood's victim asking
// with two clients would otherwise see one request cooling and the other
// kept from the free slot by its cap, until a timer ended the cooling).
// With one school waiting, its cap stands.
func (g *Gate) dispatch(cfg *settings) {
	t := now()
	shared := g.shared(t)
	for len(g.waiting) > 0 && g.used.Load() < cfg.slots {
		best, fairest := -1, 0
		for i, s := range g.waiting {
			if i > 0 && s.fairerThan(g.waiting[fairest]) {
				fairest = i
			}
			if shared && s.inflight.Load() >= g.capFor(s, cfg.slots, len(g.waiting) > 1, t) {
				continue
			}
			if best < 0 || s.fairerThan(g.waiting[best]) {
				best = i
			}
		}
		if best < 0 && len(g.waiting) > 1 {
			best = fairest
		}
		if best < 0 || !g.takeLocked(cfg.slots) {
			return
		}
		s := g.waiting[best]
		w := s.queue.pop()
		if s.queue.len() == 0 {
			g.unlist(best)
		}
		g.queued.Add(-1)
		s.inflight.Add(1)
		g.pass = s.charge(minCharge)
		w.granted = true
		w.ch <- struct{}{}
	}
}

// list adds s to the waiting schools, under mu, where the round of turns
// is now: time it spent without waiting earns it no run of turns.
func (g *Gate) list(s *School) {
	if s.listed {
		return
	}
	s.listed = true
	if p := s.pass.Load(); p < g.pass {
		s.pass.Store(g.pass)
	}
	g.waiting = append(g.waiting, s)
}

// unlist removes the school at i from the waiting ones, under mu.
func (g *Gate) unlist(i int) {
	s := g.waiting[i]
	s.listed = false
	last := len(g.waiting) - 1
	g.waiting[i] = g.waiting[last]
	g.waiting[last] = nil
	g.waiting = g.waiting[:last]
}

// unlistSchool removes s from the waiting ones, under mu.
func (g *Gate) unlistSchool(s *School) {
	for i, o := range g.waiting {
		if o == s {
			g.unlist(i)
			return
		}
	}
}

// cool counts a given-back slot as s's until t, under mu: the
// processors still work for the request, though no longer in the
// gateway's code. The slot is free for the others at once.
func (g *Gate) cool(s *School, t int64) {
	g.cooling.push(cooledSlot{until: t, s: s})
}

// expire ends the cooling whose time has come, under mu.
func (g *Gate) expire(t int64) {
	for g.cooling.len() > 0 && g.cooling.head().until <= t {
		g.cooling.pop().s.inflight.Add(-1)
	}
}

// arm sets the timer to end the next cooling while requests wait, under
// mu: a release or an admission normally comes first and does it.
func (g *Gate) arm(t int64) {
	if g.queued.Load() == 0 || g.cooling.len() == 0 {
		return
	}
	at := g.cooling.head().until
	if g.timer != nil && g.timerAt > t && g.timerAt <= at {
		return // set already, for as soon or sooner
	}
	g.timerAt = at
	if g.timer == nil {
		g.timer = time.AfterFunc(time.Duration(at-t), g.tick)
		return
	}
	g.timer.Reset(time.Duration(at - t))
}

// tick is the timer's: it ends what cooled and hands out what it can.
func (g *Gate) tick() {
	g.mu.Lock()
	t := now()
	g.timerAt = 0
	g.expire(t)
	g.dispatch(g.cfg.Load())
	g.arm(t)
	g.mu.Unlock()
}
