package caddymodule

import (
	"fmt"
	"slices"

	platformcore "github.com/schoolgate/schoolgate/platform"
	"github.com/schoolgate/schoolgate/registry"
)

// The claims between the config's platforms of one issuer, and of one
// bbolt file. The rule (platform.Claimant): of the platforms with an
// enabled record of an issuer, the first ranked by key (App's platforms)
// serves it; the others' records fail as a record of a site block's
// issuer does, with a reason naming both registries, from the moment both
// are known: at the registries' first read, and at every change of either
// (reclaim, platform.Renew). The ranking, not who came first, decides,
// for Caddy provisions its servers in no fixed order.

// claimant is the platform ranked first, before p, with an enabled
// record of issuer; nil if none.
func (p *platform) claimant(issuer string) *platform {
	return platformcore.Claimant(p.app.platformsNow(), p, (*platform).Table, issuer)
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
// p.watch's lock: it is taken in rank order only, so no two platforms
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
	p.watch.Lock()
	defer p.watch.Unlock()
	p.reclaimLocked(issuers)
}

// reclaimLocked is reclaim for a caller holding p.watch's lock.
func (p *platform) reclaimLocked(issuers []string) {
	t := p.tables.Load()
	if p.watch.Ended() || t == nil {
		return
	}
	stale := func(old *platformSchool) bool { return p.claimant(old.rec.Issuer) != old.claimedBy }
	c := platformcore.Renew(t, issuers, stale, func(rec *registry.Record) *platformSchool {
		e := p.newSchool(rec)
		// A record that fails says why in Fail's log.
		if e.claimedBy == nil {
			p.ctx.Slogger().Info("no other registry of the config serves the school any more; this record serves it",
				"issuer", rec.Issuer, "registry", p.cfg.name())
		}
		return e
	})
	if c.Next == nil {
		return
	}
	p.tables.Set(c.Next)
	for _, old := range c.Retired {
		old.retire(false)
	}
}

// reclaimAll settles the claims of p's first table with the config's
// other platforms: it renews those of p's schools whose claimant changed
// while the table was being read, and tells the platforms ranked after p
// of every issuer p has. The caller holds p.watch's lock.
func (p *platform) reclaimAll() {
	if len(p.app.platformsNow()) < 2 {
		return
	}
	var issuers []string
	for issuer := range p.tables.Load().Schools() {
		issuers = append(issuers, issuer)
	}
	p.reclaimLocked(issuers)
	p.claimsChanged(issuers)
}

// claimFile records that e opens the bbolt file at path (b is what e's
// build prepared), refusing one
// that a school of another record has, in any platform of the config:
// two records on one file would mix two schools in it. The platforms'
// locks are taken in rank order, one order for every caller.
func (p *platform) claimFile(e *platformSchool, b *schoolBuild, path string) error {
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
	p.dataFiles[path], b.dataPath = e, path
	return nil
}
