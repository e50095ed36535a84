package caddymodule

import (
	"maps"
	"net"
	"net/http"
	"strings"

	"github.com/schoolgate/schoolgate/registry"
)

// hostTable routes a request's host to its school in one map lookup,
// whatever the number of schools. A table is never changed once it
// serves: a registry change makes a new one, which replaces it whole
// (platform.tables), so a request reads it without a lock.
type hostTable struct {
	// https and http map a host key (registry.HostKey) to the enabled
	// school answering on it, by the scheme the request came with: a
	// school is an origin, and http://school.example is not
	// https://school.example.
	https, http map[string]*platformSchool
	// names counts the keys of https that name each host without its
	// port: the names a certificate is given for.
	names map[string]int
	// schools are every record's school, disabled ones too, by issuer;
	// disabled counts those disabled, for the health check.
	schools  map[string]*platformSchool
	disabled int
}

func newHostTable(size int) *hostTable {
	return &hostTable{https: make(map[string]*platformSchool, size), http: map[string]*platformSchool{},
		names: make(map[string]int, size), schools: make(map[string]*platformSchool, size)}
}

// clone is a copy of t to change before it replaces t.
func (t *hostTable) clone() *hostTable {
	return &hostTable{https: maps.Clone(t.https), http: maps.Clone(t.http), names: maps.Clone(t.names),
		schools: maps.Clone(t.schools), disabled: t.disabled}
}

// lookup finds the school of r's host and scheme (requestHTTPS: the
// connection's, or the one a trusted proxy reports). A Host header mostly
// is its key already (lower case, no default port): the first lookup
// finds it without putting the header in its one spelling, which the
// second does.
func (t *hostTable) lookup(r *http.Request) *platformSchool {
	tls := requestHTTPS(r)
	hosts := t.http
	if tls {
		hosts = t.https
	}
	if e, ok := hosts[r.Host]; ok {
		return e
	}
	return hosts[registry.HostKey(r.Host, tls)]
}

// add makes e's record the school of its issuer and, unless disabled, of
// its hosts. The caller replaces t with the table it builds.
func (t *hostTable) add(e *platformSchool) {
	if old := t.schools[e.rec.Issuer]; old != nil && old.rec.Disabled {
		t.disabled--
	}
	t.schools[e.rec.Issuer] = e
	if e.rec.Disabled {
		t.disabled++
		return
	}
	tls := strings.HasPrefix(e.rec.Issuer, "https://")
	hosts := t.hostsOf(tls)
	for _, key := range e.rec.HostKeys() {
		// The registry gives a host to one record; a host still held
		// here by another is one whose change is on its way.
		if _, held := hosts[key]; !held && tls {
			t.names[hostName(key)]++
		}
		hosts[key] = e
	}
}

// remove takes e out of t: its issuer and the hosts it still holds.
func (t *hostTable) remove(e *platformSchool) {
	if t.schools[e.rec.Issuer] == e {
		delete(t.schools, e.rec.Issuer)
		if e.rec.Disabled {
			t.disabled--
		}
	}
	tls := strings.HasPrefix(e.rec.Issuer, "https://")
	hosts := t.hostsOf(tls)
	for _, key := range e.rec.HostKeys() {
		if hosts[key] != e {
			continue
		}
		delete(hosts, key)
		if tls {
			if name := hostName(key); t.names[name] > 1 {
				t.names[name]--
			} else {
				delete(t.names, name)
			}
		}
	}
}

func (t *hostTable) hostsOf(tls bool) map[string]*platformSchool {
	if tls {
		return t.https
	}
	return t.http
}

// allowsCertificate reports whether an enabled https school answers on
// name (a TLS server name).
func (t *hostTable) allowsCertificate(name string) bool {
	return t.names[hostName(registry.HostKey(name, true))] > 0
}

// hostName is a host key without its port, an IPv6 address without its
// brackets: the name TLS asks a certificate for.
func hostName(key string) string {
	if host, _, err := net.SplitHostPort(key); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(key, "["), "]")
}
