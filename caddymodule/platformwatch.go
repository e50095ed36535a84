package caddymodule

import (
	platformcore "github.com/schoolgate/schoolgate/platform"
	"github.com/schoolgate/schoolgate/registry"
)

// The registry's watch is platform.Watch: each change the registry
// announces replaces the table whole (one change at a time), a resync
// reads the whole registry again, and a registry that cannot be read is
// read again later while the last table keeps serving. The platform is
// its Watcher: the schools, the table, the claims and the first read.

// New is the platform's school of rec (newSchool).
func (p *platform) New(rec *registry.Record) *platformSchool { return p.newSchool(rec) }

// Retire ends a replaced school's part in the platform.
func (p *platform) Retire(old *platformSchool, removed bool) { old.retire(removed) }

// Table is the platform's host table, nil before the registry was read.
func (p *platform) Table() *hostTable { return p.tables.Load() }

// SetTable makes t the table that serves.
func (p *platform) SetTable(t *hostTable) { p.tables.Set(t) }

// ClaimsChanged tells the platforms ranked after p of the issuers whose
// records changed (platformclaim.go).
func (p *platform) ClaimsChanged(issuers []string) { p.claimsChanged(issuers) }

// Connect reads the registry for the first time.
func (p *platform) Connect() error { return p.connect() }

var _ platformcore.Watcher[*platformSchool] = (*platform)(nil)
