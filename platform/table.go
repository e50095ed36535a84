package platform

import (
	"iter"
	"net"
	"strings"

	"github.com/schoolgate/schoolgate/registry"
)

// Entry is a school as a Table routes to it: one record of the registry.
type Entry interface {
	comparable
	Record() *registry.Record
}

// Table routes a request's host to its school in one lookup of a
// persistent hash trie, whatever the number of schools. A table is never
// changed once it serves: a registry change makes a new one (Clone, then
// Add and Remove), which replaces it whole, so a request reads it without
// a lock. The new table shares all but the few nodes on the paths of the
// keys that changed with the one it was cloned from: a change costs the
// same at ten schools or 100,000, and a burst of changes applied to one
// clone copies each node at most once.
type Table[S Entry] struct {
	// https and http map a host key (registry.HostKey) to the enabled
	// school answering on it, by the scheme the request came with: a
	// school is an origin, and http://school.example is not
	// https://school.example.
	https, http trie[S]
	// names counts the keys of https that name each host without its
	// port, the names a certificate is given for, where the key is not
	// the name itself (a port, an IPv6 address's brackets): a key that
	// is its own name is found in https, and most are, so that a table of
	// 100,000 schools keeps no third trie of them.
	names trie[int]
	// apart are the schools not found at their issuer's own host key in
	// https or http, by issuer: the disabled ones, and any whose host
	// another school holds (a change on its way). Every other school is
	// found there (School), so that a table of 100,000 enabled schools
	// keeps no second trie of them by issuer. n counts the schools,
	// disabled ones too; disabled those disabled, for the health check.
	apart    trie[S]
	n        int
	disabled int
	// edit owns the nodes this table made since it was cloned, which its
	// further changes write in place; nil once the table is cloned, so
	// that the nodes it shares with its clone are never written again.
	edit *editToken
}

// NewTable is an empty table. size, the number of schools expected, is
// a hint the trie has no use for.
func NewTable[S Entry](size int) *Table[S] {
	return &Table[S]{edit: new(editToken)}
}

// Clone is a copy of t to change before it replaces t; t is not to be
// changed any more (it serves, or is about to).
func (t *Table[S]) Clone() *Table[S] {
	c := *t
	c.edit = new(editToken)
	t.edit = nil
	return &c
}

// Lookup finds the school of a request's Host header and scheme (https:
// the connection's, or the one a trusted proxy reports), the zero S when
// none answers there. A Host header mostly is its key already (lower
// case, no default port): the first lookup finds it without putting the
// header in its one spelling, which the second does.
func (t *Table[S]) Lookup(host string, https bool) S {
	hosts := t.hostsOf(https)
	if e, ok := hosts.get(host); ok {
		return e
	}
	e, _ := hosts.get(registry.HostKey(host, https))
	return e
}

// School is the school of issuer, disabled or not; the zero S if the
// registry has no record of it.
func (t *Table[S]) School(issuer string) S {
	if e, ok := t.apart.get(issuer); ok {
		return e
	}
	var zero S
	key, tls, ok := registry.IssuerKey(issuer)
	if !ok {
		return zero
	}
	if e, _ := t.hostsOf(tls).get(key); e != zero && e.Record().Issuer == issuer {
		return e
	}
	return zero
}

// Schools are every record's school by issuer, in no order.
func (t *Table[S]) Schools() iter.Seq2[string, S] {
	return func(yield func(string, S) bool) {
		for issuer, e := range t.apart.all() {
			if !yield(issuer, e) {
				return
			}
		}
		for _, hosts := range []*trie[S]{&t.https, &t.http} {
			for key, e := range hosts.all() {
				issuer := e.Record().Issuer
				if own, _, _ := registry.IssuerKey(issuer); own != key {
					continue // an alias
				}
				if _, apart := t.apart.get(issuer); apart {
					continue
				}
				if !yield(issuer, e) {
					return
				}
			}
		}
	}
}

// Len is the number of records, disabled ones too; Disabled those
// disabled.
func (t *Table[S]) Len() int      { return t.n }
func (t *Table[S]) Disabled() int { return t.disabled }

// Add makes e's record the school of its issuer and, unless disabled, of
// its hosts. The caller replaces the serving table with the one it
// builds.
func (t *Table[S]) Add(e S) {
	var zero S
	rec := e.Record()
	if old := t.School(rec.Issuer); old == zero {
		t.n++
	} else if old.Record().Disabled {
		t.disabled--
	}
	if rec.Disabled {
		t.apart.set(rec.Issuer, e, t.edit)
		t.disabled++
		return
	}
	if _, ok := t.apart.get(rec.Issuer); ok {
		t.apart.del(rec.Issuer, t.edit)
	}
	tls := strings.HasPrefix(rec.Issuer, "https://")
	hosts := t.hostsOf(tls)
	var keys [4]string // adding 100,000 schools makes no garbage of their keys
	for _, key := range rec.AppendHostKeys(keys[:0]) {
		// The registry gives a host to one record; a host still held
		// here by another is one whose change is on its way. If it is
		// the other's own, that school is kept apart meanwhile.
		held, _ := hosts.get(key)
		if held == zero && tls {
			if name := HostName(key); name != key {
				n, _ := t.names.get(name)
				t.names.set(name, n+1, t.edit)
			}
		}
		if held != zero && held != e {
			if other := held.Record().Issuer; other != rec.Issuer {
				if own, _, _ := registry.IssuerKey(other); own == key && t.School(other) == held {
					t.apart.set(other, held, t.edit)
				}
			}
		}
		hosts.set(key, e, t.edit)
	}
}

// Remove takes e out of t: its issuer and the hosts it still holds.
func (t *Table[S]) Remove(e S) {
	rec := e.Record()
	if t.School(rec.Issuer) == e {
		t.n--
		if rec.Disabled {
			t.disabled--
		}
		if _, ok := t.apart.get(rec.Issuer); ok {
			t.apart.del(rec.Issuer, t.edit)
		}
	}
	tls := strings.HasPrefix(rec.Issuer, "https://")
	hosts := t.hostsOf(tls)
	var keys [4]string
	for _, key := range rec.AppendHostKeys(keys[:0]) {
		if cur, _ := hosts.get(key); cur != e {
			continue
		}
		hosts.del(key, t.edit)
		if name := HostName(key); tls && name != key {
			if n, _ := t.names.get(name); n > 1 {
				t.names.set(name, n-1, t.edit)
			} else {
				t.names.del(name, t.edit)
			}
		}
	}
}

func (t *Table[S]) hostsOf(tls bool) *trie[S] {
	if tls {
		return &t.https
	}
	return &t.http
}

// AllowsCertificate reports whether an enabled https school answers on
// name (a TLS server name).
func (t *Table[S]) AllowsCertificate(name string) bool {
	name = HostName(registry.HostKey(name, true))
	if _, ok := t.https.get(name); ok {
		return true
	}
	n, _ := t.names.get(name)
	return n > 0
}

// HTTPOn is an enabled school of an http issuer that answers on host (a
// name without its port), if one does: it gets no certificate.
func (t *Table[S]) HTTPOn(host string) (S, bool) {
	for key, e := range t.http.all() {
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
	if !strings.ContainsAny(key, ":[") {
		// A name without port or brackets, as most keys are: the parse
		// below would allocate its error (no port) at each school's Add.
		return key
	}
	if host, _, err := net.SplitHostPort(key); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(key, "["), "]")
}
