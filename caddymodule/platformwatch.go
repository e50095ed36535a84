package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/schoolgate/schoolgate/registry"
)

// The registry's watch: each change the registry announces replaces
// the table whole (one change at a time), a resync reads the whole
// registry again, and a registry that cannot be read is read again later
// while the last table keeps serving.

// changed applies a change announced by the registry (one at a time).
func (p *platform) changed(c registry.Change) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	switch {
	case p.ended:
	case p.tables.state.Load() == nil:
		p.pending = append(p.pending, c)
	default:
		p.apply(c)
	}
}

// apply reads the record a change names and puts it in the table; a
// change that names none reads the whole registry again. The caller
// holds writeMu.
func (p *platform) apply(c registry.Change) {
	if c.Issuer == "" {
		if err := p.resync(); err != nil {
			p.registryFailed(err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(p.life, storeCallTimeout)
	defer cancel()
	rec, err := p.reg.Get(ctx, c.Issuer)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		p.replace(c.Issuer, nil)
	case err != nil:
		// The change is not lost: the whole registry is read again
		// once it answers.
		p.registryFailed(fmt.Errorf("registry: reading %s: %v", c.Issuer, err))
	default:
		p.replace(rec.Issuer, &rec)
	}
}

// replace makes rec the record of issuer (nil: it has none any more). A
// school in use whose record changed is built anew before the new record
// replaces the old in the table, so that its requests never wait for the
// build; the old one serves the requests it has, and is let go of after
// the last. The caller holds writeMu.
func (p *platform) replace(issuer string, rec *registry.Record) {
	t := p.tables.state.Load()
	old := t.School(issuer)
	if rec != nil && old != nil && registry.SameRecord(&old.rec, rec) {
		return
	}
	var e *platformSchool
	if rec != nil {
		e = p.newSchool(*rec)
		if old != nil && old.IsActive() && !rec.Disabled {
			e.Warm(time.Now().UnixNano())
		}
	}
	next := t.Clone()
	if old != nil {
		next.Remove(old)
	}
	if e != nil {
		next.Add(e)
	}
	p.tables.set(next)
	if old != nil {
		old.retire(rec == nil)
	}
	p.claimsChanged([]string{issuer})
	what := "changed"
	switch {
	case rec == nil:
		what = "removed"
	case old == nil:
		what = "added"
	}
	p.ctx.Slogger().Info("a school of the platform is "+what, "issuer", issuer)
}

// resync reads the whole registry again: the registry may have missed
// changes. Unchanged records keep their school. The caller holds
// writeMu.
func (p *platform) resync() error {
	ctx, cancel := context.WithTimeout(p.life, storeCallTimeout)
	defer cancel()
	records, err := p.reg.List(ctx)
	if err != nil {
		return fmt.Errorf("registry: %v", err)
	}
	t := p.tables.state.Load()
	next := newHostTable(len(records))
	var retired, removed []*platformSchool
	for _, rec := range records {
		old := t.School(rec.Issuer)
		if old != nil && registry.SameRecord(&old.rec, &rec) {
			next.Add(old)
			continue
		}
		e := p.newSchool(rec)
		if old != nil {
			if old.IsActive() && !rec.Disabled {
				e.Warm(time.Now().UnixNano())
			}
			retired = append(retired, old)
		}
		next.Add(e)
	}
	for issuer, old := range t.Schools() {
		if next.School(issuer) == nil {
			removed = append(removed, old)
		}
	}
	p.tables.set(next)
	changed := make([]string, 0, len(retired)+len(removed))
	for _, old := range retired {
		old.retire(false)
		changed = append(changed, old.rec.Issuer)
	}
	for _, old := range removed {
		old.retire(true)
		changed = append(changed, old.rec.Issuer)
	}
	for issuer := range next.Schools() {
		if t.School(issuer) == nil {
			changed = append(changed, issuer)
		}
	}
	p.claimsChanged(changed)
	p.registryErr.Store(nil)
	return nil
}

// registryFailed records that the registry could not be read and reads
// it again later, from the start if it was never read: schools built
// keep serving meanwhile, and the changes missed are found then.
func (p *platform) registryFailed(err error) {
	f := &registryFailure{err: err, since: time.Now().UTC()}
	f.next.Store(time.Now().Add(firstRebuild).UnixNano())
	if prev := p.registryErr.Load(); prev != nil {
		f.since = prev.since
		f.next.Store(prev.next.Load())
	}
	p.registryErr.Store(f)
	if !p.retrying.CompareAndSwap(false, true) {
		return
	}
	delay := firstRebuild
	background.Add(p.life, delay, func(context.Context) time.Duration {
		err := p.retry()
		if err == nil {
			p.retrying.Store(false)
			return 0
		}
		p.ctx.Slogger().Warn("the platform's registry still cannot be read; it is tried again later",
			"registry", p.cfg.describe(), "error", err)
		delay = min(delay*2, lastRebuild)
		if f := p.registryErr.Load(); f != nil {
			f.next.Store(time.Now().Add(delay).UnixNano())
		}
		return delay
	})
}

// retry reads the registry again: the first time, or after a failure.
func (p *platform) retry() error {
	p.writeMu.Lock()
	connected := p.reg != nil
	p.writeMu.Unlock()
	if !connected {
		return p.connect()
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if p.ended {
		return nil
	}
	return p.resync()
}
