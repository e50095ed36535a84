package caddymodule

import (
	"fmt"
	"maps"
	"slices"
)

// A school is one store. Two platforms of a config may each have a record
// of one issuer (two registries, or one registry written two ways that
// its key could not tell apart: one database by two host names), and
// each would serve the school from its own store, with its own keys and
// tokens. So one serves it: the platform ranked first by key (App's
// platforms) with an enabled record of the issuer. The others' records
// of it fail as a record of a site block's issuer does, with a reason
// naming both registries, from the moment both are known: at the
// registries' first read, and at every change of either. The ranking,
// not who came first, decides, so that every start of the config and
// every instance of it decide alike (Caddy provisions its servers in no
// fixed order). A claim is an enabled record: a disabled one serves
// nothing.

// claimant is the platform ranked first, before p, with an enabled
// record of issuer; nil if none.
func (p *platform) claimant(issuer string) *platform {
	for _, q := range p.app.platformsNow() {
		if q == p {
			return nil
		}
		if t := q.tables.state.Load(); t != nil {
			if e := t.School(issuer); e != nil && !e.rec.Disabled {
				return q
			}
		}
	}
	return nil
}

// claimed is why p's record of issuer is not used: q serves it.
func (p *platform) claimed(q *platform, issuer string) error {
	return failedLoading("another part of this server's configuration serves it",
		fmt.Errorf("issuer: %s has a record in the registry %s too, which serves it (of a config's registries with a "+
			"record of one issuer, the first by name serves it: dir before postgres, then by path or database); "+
			"this record of the registry %s is not used: remove one of the two records", issuer, q.cfg.name(), p.cfg.name()))
}

// conflictOf is why e, an enabled record, cannot be served by p: a site
// block of the config serves its issuer, or a platform ranked before p
// does. It notes the claimant in e, which reclaim compares.
func (p *platform) conflictOf(e *platformSchool) error {
	e.claimedBy = p.claimant(e.rec.Issuer)
	if err := p.siteBlockConflict(e.rec.Issuer, ""); err != nil {
		return err
	}
	if e.claimedBy != nil {
		return p.claimed(e.claimedBy, e.rec.Issuer)
	}
	return nil
}

// claimsChanged tells the platforms ranked after p that p's records of
// issuers changed (added, removed, enabled, disabled). The caller holds
// p.writeMu: writeMu is taken in rank order only, so no two platforms
// wait for each other.
func (p *platform) claimsChanged(issuers []string) {
	if len(issuers) == 0 {
		return
	}
	after := false
	for _, q := range p.app.platformsNow() {
		if after {
			q.reclaim(issuers)
		}
		after = after || q == p
	}
}

// reclaim renews p's schools of issuers whose claimant is not the one
// they were made with: a record that a platform ranked before p now
// serves fails, and one that none serves any more is built by its next
// request.
func (p *platform) reclaim(issuers []string) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.reclaimLocked(issuers)
}

// reclaimLocked is reclaim for a caller holding p.writeMu.
func (p *platform) reclaimLocked(issuers []string) {
	t := p.tables.state.Load()
	if p.ended || t == nil {
		return
	}
	var next *hostTable
	var renewed []*platformSchool
	for _, issuer := range issuers {
		old := t.School(issuer)
		if old == nil || old.rec.Disabled || p.claimant(issuer) == old.claimedBy {
			continue
		}
		if next == nil {
			next = t.Clone()
		}
		e := p.newSchool(old.rec)
		next.Remove(old)
		next.Add(e)
		renewed = append(renewed, old)
		// A record that fails says why in fail's log.
		if e.claimedBy == nil {
			p.ctx.Slogger().Info("no other registry of the config serves the school any more; this record serves it",
				"issuer", issuer, "registry", p.cfg.name())
		}
	}
	if next == nil {
		return
	}
	p.tables.set(next)
	for _, old := range renewed {
		old.retire(false)
	}
}

// reclaimAll settles the claims of p's first table with the config's
// other platforms: it renews those of p's schools whose claimant changed
// while the table was being read, and tells the platforms ranked after p
// of every issuer p has. The caller holds p.writeMu.
func (p *platform) reclaimAll() {
	if len(p.app.platformsNow()) < 2 {
		return
	}
	issuers := slices.Collect(maps.Keys(p.tables.state.Load().Schools()))
	p.reclaimLocked(issuers)
	p.claimsChanged(issuers)
}

// claimFile records that e opens the bbolt file at path, refusing one
// that a school of another record has, in any platform of the config:
// two records on one file would mix two schools in it. The platforms'
// locks are taken in rank order, one order for every caller.
func (p *platform) claimFile(e *platformSchool, path string) error {
	all := p.app.platformsNow()
	if !slices.Contains(all, p) {
		all = append(slices.Clip(all), p)
	}
	for _, q := range all {
		q.mu.Lock()
	}
	defer func() {
		for _, q := range all {
			q.mu.Unlock()
		}
	}()
	for _, q := range all {
		other := q.dataFiles[path]
		switch {
		case other == nil || other == e || other.Retired():
		case q != p && other.rec.Issuer == e.rec.Issuer:
			return p.claimed(q, e.rec.Issuer)
		case q != p:
			return failedLoading("its data directory is another school's",
				fmt.Errorf("data: %s is used by %s (registry %s) and %s (registry %s); each school needs its own data directory",
					path, other.rec.Issuer, q.cfg.name(), e.rec.Issuer, p.cfg.name()))
		case other.rec.Issuer != e.rec.Issuer:
			return failedLoading("its data directory is another school's",
				fmt.Errorf("data: %s is used by %s and %s; each school needs its own data directory", path, other.rec.Issuer, e.rec.Issuer))
		}
	}
	p.dataFiles[path], e.dataPath = e, path
	return nil
}
