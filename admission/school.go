package admission

import (
	"context"
	"sync/atomic"
	"time"
)

// School is one school's handle on the gate: its weight and its slots
// taken and requests waiting.
type School struct {
	gate   *Gate
	weight uint64
	// inflight are the school's requests under way: holding a slot, or
	// given it back and cooling (gate.go).
	inflight atomic.Int64
	// paused are the school's requests that gave their slot back while
	// they wait on I/O (Slot.Pause): under way all the same, for
	// hasShareLocked.
	paused atomic.Int64
	// pass is the school's place in the round of turns: its virtual time
	// of fair queueing, moved on by the processor time its requests had
	// (charge), for its weight.
	pass atomic.Uint64
	// queue and listed (in gate.waiting) are the gate's, under its mu.
	queue  waiters
	listed bool
}

// minCharge is what a turn costs at least, charged when the slot is
// taken: requests that hold their slot for no measurable time still take
// turns in order, and a school handed several slots at once is moved on
// by each.
const minCharge = int64(time.Microsecond)

// charge moves the school on by ns of processor time, for its weight, and
// returns its pass before. A slot is charged minCharge when taken and,
// when given back, the time it was held and the work around it measured
// (cooling): so the turns share processor time, not requests — a school
// whose requests take long (a code exchange's signature) gets fewer of
// them than one whose requests are quick (a discovery document), and one
// of weight w gets w times the time.
func (s *School) charge(ns int64) uint64 {
	d := uint64(max(ns, minCharge)) / s.weight
	return s.pass.Add(d) - d
}

// fairerThan reports whether s should have the next slot before o: fewer
// slots for its weight, or as many and served less lately, or as lately
// and the older waiter.
func (s *School) fairerThan(o *School) bool {
	a, b := uint64(s.inflight.Load())*o.weight, uint64(o.inflight.Load())*s.weight
	if a != b {
		return a < b
	}
	if p, q := s.pass.Load(), o.pass.Load(); p != q {
		return p < q
	}
	return s.queue.head().seq < o.queue.head().seq
}

// InFlight is how many of the school's requests are under way now.
func (s *School) InFlight() int { return int(s.inflight.Load()) }

// Refusal is a request not admitted: why, and when to try again.
type Refusal struct {
	// Cause is CauseQueueFull or CauseWait.
	Cause string
	// RetryAfter is when a retry may be let in.
	RetryAfter time.Duration
}

func (r *Refusal) Error() string {
	if r.Cause == CauseQueueFull {
		return "the server is busy: too many of the school's requests wait for their turn"
	}
	return "the server is busy: the request waited too long for the school's turn"
}

// The causes of a Refusal.
const (
	CauseQueueFull = "queue_full"
	CauseWait      = "wait"
)

// The refusals, allocated once: a refusal under a flood costs nothing.
var (
	errQueueFull = &Refusal{Cause: CauseQueueFull, RetryAfter: time.Second}
	errWait      = &Refusal{Cause: CauseWait, RetryAfter: time.Second}
)

// Admit lets a request in: at once while the school is alone on the
// instance or a slot is free and nobody waits, else after waiting in the
// school's queue for its turn. The error is a *Refusal, or ctx's error
// when the request ended while it waited; the Slot is then zero.
func (s *School) Admit(ctx context.Context) (Slot, error) {
	g := s.gate
	cfg := g.cfg.Load()
	if cfg.off {
		return Slot{}, nil
	}
	t := now()
	g.noteSchool(s, t)
	if !g.shared(t) {
		// A lone school has the whole instance: its slots are not even
		// counted, and cost nothing but the clock.
		return Slot{s: s, ctx: ctx, since: t, cpu: g.cost.begin(t)}, nil
	}
	if g.tryTake(s, cfg.slots, t) {
		s.inflight.Add(1)
		s.charge(minCharge)
		return Slot{s: s, ctx: ctx, since: t, cpu: g.cost.begin(t), counted: true}, nil
	}
	return s.wait(ctx, cfg, t)
}

// wait is Admit's slow path.
func (s *School) wait(ctx context.Context, cfg *settings, t int64) (Slot, error) {
	if err := s.queueUp(ctx, cfg, t, false, 0); err != nil {
		return Slot{}, err
	}
	at := now()
	return Slot{s: s, ctx: ctx, since: at, cpu: s.gate.cost.begin(at), counted: true, waited: at - t}, nil
}

// queueUp takes a slot for s, waiting in its queue if none is free or
// others wait: at the back within the bounds, or, for a request resuming
// after a pause, at the front for at most budget (what is left of its
// hardWaits bounds), past which errWait lets it go on without a slot.
func (s *School) queueUp(ctx context.Context, cfg *settings, t int64, resuming bool, budget time.Duration) error {
	g := s.gate
	g.mu.Lock()
	g.expire(t)
	if g.queued.Load() == 0 && s.inflight.Load() < g.capFor(s, cfg.slots, false, t) && g.takeLocked(cfg.slots) {
		g.mu.Unlock()
		s.inflight.Add(1)
		s.charge(minCharge)
		return nil
	}
	if !resuming && s.queue.len() >= cfg.queue {
		g.mu.Unlock()
		return errQueueFull
	}
	w := newWaiter()
	g.seq++
	w.seq = g.seq
	if resuming {
		s.queue.pushFront(w)
	} else {
		s.queue.push(w)
	}
	g.list(s)
	g.queued.Add(1)
	g.dispatch(cfg)
	g.arm(t)
	g.mu.Unlock()

	bound := cfg.wait
	if resuming {
		bound = budget
	}
	w.timer.Reset(bound)
	var err error
	for waited := bound; ; waited += cfg.wait {
		select {
		case <-w.ch:
		case <-w.timer.C:
			err = errWait
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != errWait || resuming || waited >= hardWaits*cfg.wait {
			break
		}
		// Past the bound, a school is refused only if it has its share
		// under way: one kept from its turn by the others' long requests,
		// on an instance too busy for everyone, waits on, up to hardWaits
		// bounds.
		g.mu.Lock()
		over := w.granted || s.hasShareLocked(cfg.slots, now())
		g.mu.Unlock()
		if over {
			break
		}
		err = nil
		w.timer.Reset(cfg.wait)
	}
	w.timer.Stop()
	if err != nil {
		g.mu.Lock()
		if w.granted {
			// Handed a slot as the wait ended: keep it.
			<-w.ch
			err = nil
		} else {
			s.queue.remove(w)
			if s.queue.len() == 0 {
				g.unlistSchool(s)
			}
			g.queued.Add(-1)
		}
		g.mu.Unlock()
	}
	w.put()
	return err
}

// hardWaits is how many wait bounds a request waits at most in all: one
// within its school's share is refused all the same past them, before it
// begins; one that paused on I/O goes on without a slot past them, for
// it has work under way (Resume). Never a hang.
const hardWaits = 4

// hasShareLocked reports, under the gate's mu, whether s has at least its
// share of the slots under way at t: the slots divided by weight between
// the schools waiting and, when none but s waits, one other present (a
// neighbour asking now and then is present without waiting). Under way
// are its requests holding or cooling a slot and those paused on I/O. A
// school past its wait bound with less was kept waiting by the
// instance's load, not by its own excess.
func (s *School) hasShareLocked(slots, t int64) bool {
	g := s.gate
	var weights uint64
	others := false
	for _, o := range g.waiting {
		weights += o.weight
		others = others || o != s
	}
	if !s.listed {
		weights += s.weight
	}
	if !others && g.othersPresent(s, t) {
		weights++ // another school, of weight 1 at least
	}
	underWay := uint64(max(s.inflight.Load()+s.paused.Load(), 0))
	return underWay*weights >= uint64(slots)*s.weight
}
