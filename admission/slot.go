package admission

import (
	"context"
	"time"
)

// Slot is an admitted request's hold on the gate. Release it once the
// gateway's own work for the request is done. Releasing twice, or a zero
// Slot, does nothing, so `defer slot.Release()` after Admit is always
// right; a copy of a Slot is not a second hold and must not be released.
type Slot struct {
	s   *School
	ctx context.Context
	// since is when the slot was taken, on the gate's clock; cpu the
	// sample's reading then.
	since int64
	cpu   sample
	// counted: the slot is one of the gate's. A lone school's are not.
	counted bool
	// depth counts the Pauses not resumed; pausedAt is when the first
	// began, paused the time spent paused.
	depth    int32
	pausedAt int64
	paused   int64
	// spent is the processor time stores spent on the request's behalf
	// while it was paused (Charge).
	spent int64
	// waited is how long the request has waited for a slot, to begin
	// and to resume: all its waits together stay within hardWaits bounds.
	waited int64
}

// Counted reports whether the slot is one of the gate's: the instance
// is shared, and Pause gives something back.
func (sl *Slot) Counted() bool { return sl.s != nil && sl.counted }

// Release gives the slot back, to the fairest waiting school. While the
// instance is shared, the school keeps counting it a little longer, for
// the measured HTTP work around a request (capFor, fairerThan).
func (sl *Slot) Release() {
	s := sl.s
	if s == nil {
		return
	}
	sl.s = nil
	if !sl.counted && !sl.cpu.sampled {
		return
	}
	g := s.gate
	t := now()
	if sl.cpu.sampled {
		g.cost.end(sl.cpu, t-sl.since-sl.paused, sl.spent, t)
	}
	if !sl.counted {
		return
	}
	// The school keeps counting the slot for the work around the request
	// and for what stores spent on its behalf while it was paused; while
	// another school is present, the whole at the scale of the processors
	// the instance can have (capacity.go): the scale divides what the
	// instance has between the schools asking, and a school left alone
	// after its neighbour went is not slowed by it.
	held := t - sl.since - sl.paused
	cool := g.cost.ns.Load() + sl.spent
	if g.othersPresent(s, t) {
		cool = g.cost.capacity.scaled(held+cool) - held
	}
	s.charge(held + cool)
	if sl.depth > 0 {
		s.paused.Add(-1)
		return // a paused slot was given back already
	}
	if cool > 0 && g.shared(t) {
		g.used.Add(-1)
		g.mu.Lock()
		g.cool(s, t+cool)
		g.expire(t)
		g.dispatch(g.cfg.Load())
		g.arm(t)
		g.mu.Unlock()
		return
	}
	s.giveBack(t)
}

// giveBack frees a slot of s at once.
func (s *School) giveBack(t int64) {
	g := s.gate
	s.inflight.Add(-1)
	g.used.Add(-1)
	if g.queued.Load() != 0 {
		g.mu.Lock()
		g.expire(t)
		g.dispatch(g.cfg.Load())
		g.arm(t)
		g.mu.Unlock()
	}
}

// Pause gives the slot back while the request waits on I/O — a database
// round trip, a commit's sync, a call to the legacy server — doing none of
// the work the slots stand for; Resume takes one again. Pauses nest: the
// slot is taken again at the last Resume. A lone school's slot is not
// counted, and a pause costs nothing.
func (sl *Slot) Pause() {
	if sl.s == nil || !sl.counted {
		return
	}
	sl.depth++
	if sl.depth > 1 {
		return
	}
	sl.pausedAt = now()
	sl.s.paused.Add(1)
	sl.s.giveBack(sl.pausedAt)
}

// Charge counts d of processor time a store spent on the request's
// behalf while it was paused (store.Waiter): a group commit's leader
// runs every call of its group, so that their work is charged to their
// schools, not to the leader's nor to every school alike. The school
// counts the slot that much longer when it is given back.
func (sl *Slot) Charge(d time.Duration) {
	if sl.s != nil && d > 0 {
		sl.spent += int64(d)
	}
}

// Resume takes a slot again after Pause: before any request of the school
// that waits to begin, never refused, for the request has work under way
// (a transaction, a commit). A request whose context ended meanwhile, or
// whose waits reach hardWaits bounds in all, goes on without a slot: a
// flood's requests resuming behind each other are not held without end,
// and what goes on uncounted is bounded by what was admitted.
func (sl *Slot) Resume() {
	s := sl.s
	if s == nil || !sl.counted || sl.depth == 0 {
		return
	}
	sl.depth--
	if sl.depth > 0 {
		return
	}
	g := s.gate
	t := now()
	sl.paused += t - sl.pausedAt
	s.paused.Add(-1)
	cfg := g.cfg.Load()
	if cfg.off {
		sl.counted = false
		return
	}
	if g.tryTake(s, cfg.slots, t) {
		s.inflight.Add(1)
		return
	}
	budget := hardWaits*cfg.wait - time.Duration(sl.waited)
	if budget <= 0 {
		sl.counted = false
		return
	}
	err := s.queueUp(sl.ctx, cfg, t, true, budget)
	sl.waited += now() - t
	if err != nil {
		sl.counted = false
	}
}
