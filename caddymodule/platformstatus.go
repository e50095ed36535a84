package caddymodule

import (
	"context"
	"maps"

	"github.com/schoolgate/schoolgate/adminapi"
	"github.com/schoolgate/schoolgate/school"
)

// platformSummary is a platform as /schoolgate/health reports it.
type platformSummary = adminapi.PlatformSummary

// runningPlatforms are the platforms of the config being served now.
func runningPlatforms() []*platform {
	app, err := runningApp()
	if err != nil {
		return nil
	}
	app.mu.Lock()
	defer app.mu.Unlock()
	return append([]*platform(nil), app.platforms...)
}

// schools are the platform's schools, none before the registry was read:
// a copy of the table's, for the admin API's views.
func (p *platform) schools() map[string]*platformSchool {
	if t := p.tables.Load(); t != nil {
		return maps.Collect(t.Schools())
	}
	return nil
}

// statuses describes every school of the platform for /schoolgate/sites,
// building none: an idle, disabled or failed school is described by its
// record.
func (p *platform) statuses(ctx context.Context) []siteStatus {
	schools := p.schools()
	out := make([]siteStatus, 0, len(schools))
	for _, e := range schools {
		st, ok := e.status(ctx)
		if !ok {
			st = siteStatus{Issuer: e.rec.Issuer, State: e.state(), KeyIDs: []string{}}
			if f := e.Failed(); f != nil {
				next := f.nextTry()
				st.State, st.Reason, st.Since, st.NextTry = "failed", f.failure.Load().Error(), f.since, &next
			}
		}
		st.Platform = p.cfg.describe()
		out = append(out, st)
	}
	return out
}

// status describes a built school, reporting whether it is built.
func (e *platformSchool) status(ctx context.Context) (siteStatus, bool) {
	a := e.Active()
	if a == nil || !a.Acquire() {
		return siteStatus{}, false
	}
	defer a.Release()
	st := a.Built().status(ctx)
	st.State = "active"
	return st, true
}

// health reports the platform's registry, its counts and the schools
// that failed to build, from what the platform keeps as schools change:
// no store is asked and no school is visited, so that it costs the same
// at 10 built schools as at 10,000 (a school's own check is
// /schoolgate/health?issuer=). Only the registry decides whether the
// instance is healthy: a school that fails fails alike at every instance
// of the platform (its record and store are shared), so a load balancer
// that took this one out for it would take every other school with it
// and help none.
func (p *platform) health() ([]school.Health, platformSummary, bool) {
	sum := platformSummary{Registry: p.cfg.describe(), MaxActive: p.max}
	healthy := true
	if f := p.watch.Failure(); f != nil {
		next := f.Next()
		sum.RegistryError, sum.NextTry, healthy = f.Err.Error(), &next, false
	}
	if t := p.tables.Load(); t != nil {
		sum.Schools, sum.Disabled = t.Len(), t.Disabled()
	}
	sum.Active = p.built.Len()
	p.mu.Lock()
	failing := make([]*platformSchool, 0, len(p.failing))
	for e := range p.failing {
		failing = append(failing, e)
	}
	p.mu.Unlock()
	var out []school.Health
	for _, e := range failing {
		if f := e.Failed(); f != nil {
			out = append(out, school.Health{Issuer: e.rec.Issuer, Store: "failed to load: " + f.failure.Load().Error(),
				Keys: "not loaded", Catalog: "not loaded"})
		}
	}
	sum.Failed = len(out)
	return out, sum, healthy
}

// noteFailing adds e to the failing schools, or takes it out: once it is
// built, or retired. A failure and a retire running at once leave it out
// (platform.School's fail reads retired after it adds e; Retire sets it
// before e is taken out).
func (p *platform) noteFailing(e *platformSchool, failing bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if failing {
		p.failing[e] = struct{}{}
	} else {
		delete(p.failing, e)
	}
}

// activeCount is how many schools are built now.
func (p *platform) activeCount() int { return p.built.Len() }
