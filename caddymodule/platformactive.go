package caddymodule

// The platform keeps at most max_active schools built (platformcore.Bound):
// each built school is counted when it is installed, and past the bound
// the least recently used idle ones are let go of (a school with a
// request in flight is let go of by its last request out,
// activeSchool.release).

// activated counts a school just built, and lets go of the least recently
// used idle ones past max_active (platformcore.Bound).
func (p *platform) activated(a *activeSchool) {
	for _, v := range p.built.Add(a) {
		v.letGo()
	}
}

// trim lets go of idle schools past max_active.
func (p *platform) trim() {
	for _, v := range p.built.Trim() {
		v.letGo()
	}
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
func (p *platform) forget(a *activeSchool) { p.built.Forget(a) }

// activeCount is how many schools are built now.
func (p *platform) activeCount() int { return p.built.Len() }
