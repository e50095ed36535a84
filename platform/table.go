package platform

import (
	"maps"
	"net"
	"strings"

	"github.com/schoolgate/schoolgate/registry"
)

// Entry is a school as a Table routes to it: one record of the registry.
type Entry interface {
	comparable
	Record() *registry.Record
}

// Table routes a request's host to its school in one map lookup,
// whatever the number of schools. A table is never changed once it
// serves: a registry change makes a new one (Clone, then Add and Remove),
// which replaces it whole, so a request reads it without a lock.
type Table[S Entry] struct {
	// https and http map a host key (registry.HostKey) to the enabled
	// school answering on it, by the scheme the request came with: a
	// school is an origin, and http://school.example is not
	// https://school.example.
	https, http map[string]S
	// names counts the keys of https that name each host without its
	// port: the names a certificate is given for.
	names map[string]int
	// schools are every record's school, disabled ones too, by issuer;
	// disabled counts those disabled, for the health check.
	schools  map[string]S
	disabled int
}

// NewTable is an empty table with room for size schools.
func NewTable[S Entry](size int) *Table[S] {
	return &Table[S]{https: make(map[string]S, size), http: map[string]S{},
		names: make(map[string]int, size), schools: make(map[string]S, size)}
}

// Clone is a copy of t to change before it replaces t.
func (t *Table[S]) Clone() *Table[S] {
	return &Table[S]{https: maps.Clone(t.https), http: maps.Clone(t.http), names: maps.Clone(t.names),
		schools: maps.Clone(t.schools), disabled: t.disabled}
}

// Lookup finds the school of a request's Host header and scheme (https:
// the connection's, or the one a trusted proxy reports), the zero S when
// none answers there. A Host header mostly is its key already (lower
// case, no default port): the first lookup finds it without putting the
// header in its one spelling, which the second does.
func (t *Table[S]) Lookup(host string, https bool) S {
	hosts := t.hostsOf(https)
	if e, ok := hosts[host]; ok {
		return e
	}
	return hosts[registry.HostKey(host, https)]
}

// School is the school of issuer, disabled or not; the zero S if the
// registry has no record of it.
func (t *Table[S]) School(issuer string) S { return t.schools[issuer] }

// Schools are every record's school by issuer. The map is the table's:
// read it, never change it.
func (t *Table[S]) Schools() map[string]S { return t.schools }

// Len is the number of records, disabled ones too; Disabled those
// disabled.
func (t *Table[S]) Len() int      { return len(t.schools) }
func (t *Table[S]) Disabled() int { return t.disabled }

// Add makes e's record the school of its issuer and, unless disabled, of
// its hosts. The caller replaces the serving table with the one it
// builds.
func (t *Table[S]) Add(e S) {
	rec := e.Record()
	if old, ok := t.schools[rec.Issuer]; ok && old.Record().Disabled {
		t.disabled--
	}
	t.schools[rec.Issuer] = e
	if rec.Disabled {
		t.disabled++
		return
	}
	tls := strings.HasPrefix(rec.Issuer, "https://")
	hosts := t.hostsOf(tls)
	for _, key := range rec.HostKeys() {
		// The registry gives a host to one record; a host still held
		// here by another is one whose change is on its way.
		if _, held := hosts[key]; !held && tls {
			t.names[HostName(key)]++
		}
		hosts[key] = e
	}
}

// Remove takes e out of t: its issuer and the hosts it still holds.
func (t *Table[S]) Remove(e S) {
	rec := e.Record()
	if t.schools[rec.Issuer] == e {
		delete(t.schools, rec.Issuer)
		if rec.Disabled {
			t.disabled--
		}
	}
	tls := strings.HasPrefix(rec.Issuer, "https://")
	hosts := t.hostsOf(tls)
	for _, key := range rec.HostKeys() {
		if hosts[key] != e {
			continue
		}
		delete(hosts, key)
		if tls {
			if name := HostName(key); t.names[name] > 1 {
				t.names[name]--
			} else {
				delete(t.names, name)
			}
		}
	}
}

func (t *Table[S]) hostsOf(tls bool) map[string]S {
	if tls {
		return t.https
	}
	return t.http
}

// AllowsCertificate reports whether an enabled https school answers on
// name (a TLS server name).
func (t *Table[S]) AllowsCertificate(name string) bool {
	return t.names[HostName(registry.HostKey(name, true))] > 0
}

// HTTPOn is an enabled school of an http issuer that answers on host (a
// name without its port), if one does: it gets no certificate.
func (t *Table[S]) HTTPOn(host string) (S, bool) {
	for key, e := range t.http {
		if HostName(key) == host {
			return e, true
		}
	}
	var none S
	return none, false
}

// HostName is a host key without its port, an IPv6 address without its
// brackets: the name TLS asks a certificate for.
func HostName(key string) string {
	if host, _, err := net.SplitHostPort(key); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(key, "["), "]")
}
