package admission

// Slot is an admitted request's hold on the gate. Release it once the
// gateway's own work for the request is done. Releasing twice, or a zero
// Slot, does nothing, so `defer slot.Release()` after Admit is always
// right; a copy of a Slot is not a second hold and must not be released.
type Slot struct {
	s *School
	// since is when the slot was taken, on the gate's clock; cpu the
	// sample's reading then.
	since int64
	cpu   sample
	// counted: the slot is one of the gate's. A lone school's are not.
	counted bool
}

// Release gives the slot back. While the instance is shared the slot
// stays taken for the measured HTTP work around a request, then goes to
// the fairest waiting school.
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
		g.cost.end(sl.cpu, t-sl.since, t)
	}
	if !sl.counted {
		return
	}
	if o := g.cost.ns.Load(); o > 0 && g.shared(t) {
		g.mu.Lock()
		g.cool(s, t+o)
		g.expire(t)
		g.dispatch(g.cfg.Load())
		g.arm(t)
		g.mu.Unlock()
		return
	}
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
