package caddymodule

import (
	"errors"
	"iter"
	"log/slog"

	"github.com/schoolgate/schoolgate/adminapi"
	"github.com/schoolgate/schoolgate/registry"
)

// The platform's schools written and read through Caddy's admin API are
// package adminapi's (Schools); here the running platforms are handed to
// it, as adminapi.Platform.

// schoolsAPI answers /schoolgate/schools and /schoolgate/schools/remove.
var schoolsAPI = adminapi.Schools{Platforms: func() []adminapi.Platform {
	running := runningPlatforms()
	ps := make([]adminapi.Platform, len(running))
	for i, p := range running {
		ps[i] = p
	}
	return ps
}}

var (
	handleSchools      = adminRoute(schoolsAPI.Schools)
	handleSchoolRemove = adminRoute(schoolsAPI.Remove)
)

// Name names the platform's registry.
func (p *platform) Name() string { return p.cfg.describe() }

// Registry is the platform's registry once it was read.
func (p *platform) Registry() (registry.Registry, error) {
	p.watch.Lock()
	defer p.watch.Unlock()
	reg := p.watch.Registry()
	if reg == nil {
		return nil, errors.New("the registry is not read")
	}
	return reg, nil
}

// Validate checks a record with the platform's registry's Validator.
func (p *platform) Validate(rec *registry.Record) error {
	if p.cfg.Postgres != nil {
		return validatePostgresRecord(rec)
	}
	return validateDirRecord(rec)
}

// RetryAfter is when a registry not read (yet) is tried again.
func (p *platform) RetryAfter() int {
	if f := p.watch.Failure(); f != nil {
		return f.RetryAfter()
	}
	return 1
}

// Logger is the platform's config's logger.
func (p *platform) Logger() *slog.Logger { return p.ctx.Slogger() }

// Served are the schools of the platform's table, none before the
// registry was read.
func (p *platform) Served() (iter.Seq2[string, adminapi.ServedSchool], bool) {
	t := p.tables.Load()
	if t == nil {
		return nil, false
	}
	return func(yield func(string, adminapi.ServedSchool) bool) {
		for issuer, e := range t.Schools() {
			if !yield(issuer, e) {
				return
			}
		}
	}, true
}

// School is the school of the table with the issuer, nil if none.
func (p *platform) School(issuer string) adminapi.ServedSchool {
	if t := p.tables.Load(); t != nil {
		if e := t.School(issuer); e != nil {
			return e
		}
	}
	return nil
}

// View is the school as the platform serves it now.
func (e *platformSchool) View() adminapi.SchoolView {
	v := adminapi.SchoolView{Issuer: e.rec.Issuer, Hosts: e.rec.Hosts, Disabled: e.rec.Disabled, Version: e.rec.Version,
		UpdatedAt: e.rec.UpdatedAt, Platform: e.p.cfg.describe(), State: e.state()}
	if v.Hosts == nil {
		v.Hosts = []string{}
	}
	if f := e.Failed(); f != nil && v.State == "failed" {
		next := f.nextTry()
		v.Reason, v.NextTry = f.failure.Load().Error(), &next
	}
	return v
}
