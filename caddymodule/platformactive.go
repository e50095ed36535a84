package caddymodule

// The platform keeps at most max_active schools built: each built school
// is counted when it is installed, and past the bound the least recently
// used idle ones are let go of (a school with a request in flight is let
// go of by its last request out, activeSchool.release).

// activated counts a school just built, and lets go of the least recently
// used idle ones past max_active.
func (p *platform) activated(a *activeSchool) {
	p.mu.Lock()
	p.active[a] = struct{}{}
	idle := p.pickIdle()
	p.mu.Unlock()
	for _, v := range idle {
		v.letGo()
	}
}

// trim lets go of idle schools past max_active.
func (p *platform) trim() {
	p.mu.Lock()
	idle := p.pickIdle()
	p.mu.Unlock()
	for _, v := range idle {
		v.letGo()
	}
}

// pickIdle closes the least recently used schools without a request in
// flight until at most max are active, and returns them for the caller to
// let go of once it released p.mu. Past max with every school busy, over
// makes the next request that leaves a school idle try again. The caller
// holds p.mu. A scan of the active schools per school let go of: the
// activation that calls it opened a store, which costs more.
func (p *platform) pickIdle() []*activeSchool {
	var out []*activeSchool
	for len(p.active) > p.max {
		var oldest *activeSchool
		for a := range p.active {
			if a.refs.Load() == 0 && (oldest == nil || a.used.Load() < oldest.used.Load()) {
				oldest = a
			}
		}
		if oldest == nil {
			p.over.Store(true)
			return out
		}
		if !oldest.closeIdle() {
			continue // a request came in meanwhile
		}
		delete(p.active, oldest)
		out = append(out, oldest)
	}
	p.over.Store(false)
	return out
}

// noteFailing adds e to the failing schools, or takes it out: once it is
// built, or retired. A failure and a retire running at once leave it out
// (fail reads retired after it adds e; retire sets it before it takes e
// out).
func (p *platform) noteFailing(e *platformSchool, failing bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if failing {
		p.failing[e] = struct{}{}
	} else {
		delete(p.failing, e)
	}
}

// forget stops counting a school let go of.
func (p *platform) forget(a *activeSchool) {
	p.mu.Lock()
	delete(p.active, a)
	p.mu.Unlock()
}

// activeCount is how many schools are built now.
func (p *platform) activeCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.active)
}
