package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"time"

	platformcore "github.com/schoolgate/schoolgate/platform"
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

// replace makes rec the record of issuer (nil: it has none any more),
// in a new table (platform.Replace); the schools it replaced are retired
// once it serves, and serve the requests they have until the last. The
// caller holds writeMu.
func (p *platform) replace(issuer string, rec *registry.Record) {
	t := p.tables.state.Load()
	old := t.School(issuer)
	c, ok := platformcore.Replace(t, issuer, rec, p.newSchool)
	if !ok {
		return
	}
	p.serveChange(c)
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
// changes. Unchanged records keep their school (platform.Resync). The
// caller holds writeMu.
func (p *platform) resync() error {
	ctx, cancel := context.WithTimeout(p.life, storeCallTimeout)
	defer cancel()
	records, err := p.reg.List(ctx)
	if err != nil {
		return fmt.Errorf("registry: %v", err)
	}
	p.serveChange(platformcore.Resync(p.tables.state.Load(), records, p.newSchool))
	p.registryErr.Store(nil)
	return nil
}

// serveChange serves the table a registry change made, retires the
// schools it replaced, and tells the platforms ranked after this one of
// the issuers it changed (platformclaim.go). The caller holds writeMu.
func (p *platform) serveChange(c platformcore.Change[*platformSchool]) {
	p.tables.set(c.Next)
	for _, old := range c.Retired {
		old.retire(false)
	}
	for _, old := range c.Removed {
		old.retire(true)
	}
	p.claimsChanged(c.Issuers)
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
