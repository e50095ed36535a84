package platform

import (
	"time"

	"github.com/schoolgate/schoolgate/registry"
)

// The registry's watch: each change the registry announces replaces the
// table whole, and a resync reads the whole registry again. Replace and
// Resync make the table that follows a change; the caller (the adapter,
// which reads the registry and orders its changes) serves it, then
// retires the schools it replaced.

// Watched is a school as the registry's changes replace it.
type Watched interface {
	Entry
	// IsActive reports whether the school is built and lets requests
	// in; Warm builds it without a request: a changed record of a school
	// in use is built anew before it replaces the old one, so that its
	// requests never wait for the build.
	IsActive() bool
	Warm(used int64)
}

// Change is what a registry change did to a table.
type Change[S Watched] struct {
	// Next is the table to serve in place of the one changed.
	Next *Table[S]
	// Retired are the schools whose record changed, Removed those whose
	// record is gone: the caller retires both once Next serves.
	Retired, Removed []S
	// Issuers are those whose record was added, changed or removed.
	Issuers []string
}

// Replace makes rec the record of issuer in a copy of t (rec nil: it has
// none any more), a new school made by newSchool; ok is false if the
// record is the one t has. A school in use whose record changed is built
// anew first (Warm); the old one serves the requests it has until the
// caller retires it.
func Replace[S Watched](t *Table[S], issuer string, rec *registry.Record, newSchool func(*registry.Record) S) (c Change[S], ok bool) {
	var zero S
	old := t.School(issuer)
	if rec != nil && old != zero && registry.SameRecord(old.Record(), rec) {
		return c, false
	}
	e := zero
	if rec != nil {
		e = newSchool(rec)
		if old != zero && old.IsActive() && !rec.Disabled {
			e.Warm(time.Now().UnixNano())
		}
	}
	c.Next = t.Clone()
	if old != zero {
		c.Next.Remove(old)
		if rec == nil {
			c.Removed = []S{old}
		} else {
			c.Retired = []S{old}
		}
	}
	if e != zero {
		c.Next.Add(e)
	}
	c.Issuers = []string{issuer}
	return c, true
}

// Resync makes the table of a whole registry's records: an unchanged
// record keeps its school, a changed one gets a new school (built first
// if the old one is in use, as in Replace), and those in t and not in
// records are removed.
func Resync[S Watched](t *Table[S], records []registry.Record, newSchool func(*registry.Record) S) Change[S] {
	var zero S
	c := Change[S]{Next: NewTable[S](len(records))}
	for i := range records {
		rec := &records[i]
		old := t.School(rec.Issuer)
		if old != zero && registry.SameRecord(old.Record(), rec) {
			c.Next.Add(old)
			continue
		}
		// A school of its own copy: one kept pointing into records
		// would keep the whole listing alive.
		own := *rec
		e := newSchool(&own)
		if old != zero {
			if old.IsActive() && !rec.Disabled {
				e.Warm(time.Now().UnixNano())
			}
			c.Retired = append(c.Retired, old)
		}
		c.Next.Add(e)
	}
	for issuer, old := range t.Schools() {
		if c.Next.School(issuer) == zero {
			c.Removed = append(c.Removed, old)
		}
	}
	c.Issuers = make([]string, 0, len(c.Retired)+len(c.Removed))
	for _, old := range c.Retired {
		c.Issuers = append(c.Issuers, old.Record().Issuer)
	}
	for _, old := range c.Removed {
		c.Issuers = append(c.Issuers, old.Record().Issuer)
	}
	for issuer := range c.Next.Schools() {
		if t.School(issuer) == zero {
			c.Issuers = append(c.Issuers, issuer)
		}
	}
	return c
}
