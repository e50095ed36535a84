package platform

import (
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/registry"
)

type recSchool struct{ rec registry.Record }

func (s *recSchool) Record() *registry.Record { return &s.rec }

// A host finds its school by the request's scheme, in any spelling of the
// Host header; a disabled school answers on none of its hosts and gets
// no certificate; a table cloned and changed leaves the one it was cloned
// from as it was (a serving table never changes).
func TestTable(t *testing.T) {
	a := &recSchool{registry.Record{Issuer: "https://a.example", Hosts: []string{"www.a.example"}}}
	b := &recSchool{registry.Record{Issuer: "http://b.example:8080"}}
	off := &recSchool{registry.Record{Issuer: "https://off.example", Disabled: true}}
	port := &recSchool{registry.Record{Issuer: "https://p.example:8443", Hosts: []string{"[::1]:8443"}}}
	tb := NewTable[*recSchool](4)
	for _, s := range []*recSchool{a, b, off, port} {
		tb.Add(s)
	}
	tests := []struct {
		host  string
		https bool
		want  *recSchool
	}{
		{"a.example", true, a},
		{"A.Example:443", true, a},
		{"www.a.example", true, a},
		{"a.example", false, nil},
		{"b.example:8080", false, b},
		{"b.example:8080", true, nil},
		{"off.example", true, nil},
		{"nowhere.example", true, nil},
	}
	for _, tt := range tests {
		if got := tb.Lookup(tt.host, tt.https); got != tt.want {
			t.Errorf("Lookup(%s, https %v) = %v, want %v", tt.host, tt.https, got, tt.want)
		}
	}
	if tb.Len() != 4 || tb.Disabled() != 1 || tb.School("https://off.example") != off {
		t.Errorf("%d schools, %d disabled", tb.Len(), tb.Disabled())
	}
	certs := map[string]bool{"a.example": true, "WWW.A.EXAMPLE": true, "off.example": false, "b.example": false,
		"p.example": true, "::1": true, "[::1]": true, "p.example:8443": true}
	for name, want := range certs {
		if got := tb.AllowsCertificate(name); got != want {
			t.Errorf("AllowsCertificate(%s) = %v, want %v", name, got, want)
		}
	}
	// Only the keys that are not their names are counted apart.
	if tb.names.n != 2 {
		t.Errorf("%d names counted apart, want 2 (p.example and ::1)", tb.names.n)
	}
	gone := tb.Clone()
	gone.Remove(port)
	if gone.AllowsCertificate("p.example") || gone.AllowsCertificate("::1") || gone.names.n != 0 {
		t.Error("a removed school's names still get certificates")
	}
	if e, ok := tb.HTTPOn("b.example"); !ok || e != b {
		t.Errorf("HTTPOn(b.example) = %v %v", e, ok)
	}

	next := tb.Clone()
	next.Remove(a)
	a2 := &recSchool{registry.Record{Issuer: "https://a.example"}}
	next.Add(a2)
	if next.Lookup("www.a.example", true) != nil || next.Lookup("a.example", true) != a2 || next.AllowsCertificate("www.a.example") {
		t.Error("the changed record's alias still answers in the new table")
	}
	if tb.Lookup("www.a.example", true) != a || !tb.AllowsCertificate("www.a.example") {
		t.Error("the serving table changed with its clone")
	}
	for key, name := range map[string]string{"[::1]:8443": "::1", "[::1]": "::1", "a.example": "a.example",
		"a.example:8443": "a.example", "127.0.0.1:80": "127.0.0.1", "127.0.0.1": "127.0.0.1"} {
		if got := HostName(key); got != name {
			t.Errorf("HostName(%s) = %s, want %s", key, got, name)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = HostName("a.example") }); n != 0 {
		t.Errorf("HostName of a name without port allocates %v times", n)
	}
}

// A table holds what maps of schools by issuer and by host would through
// any sequence of Adds and Removes, aliases taking other schools' own
// hosts among them; and an enabled school that holds its own host is
// kept by host alone (no trie of the schools by issuer).
func TestTableMatchesMaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	issuers := []string{"https://a.example", "https://b.example", "http://c.example:8080", "https://d.example:8443"}
	aliases := []string{"a.example", "b.example", "x.example", "d.example:8443", "c.example:8080"}
	tb := NewTable[*recSchool](0)
	bySchool := map[string]*recSchool{}
	byHost := map[bool]map[string]*recSchool{true: {}, false: {}}
	var made []*recSchool
	for step := range 5000 {
		if step%7 == 0 {
			tb = tb.Clone()
		}
		if len(made) > 0 && rng.IntN(3) == 0 {
			e := made[rng.IntN(len(made))]
			tb.Remove(e)
			if bySchool[e.rec.Issuer] == e {
				delete(bySchool, e.rec.Issuer)
			}
			hosts := byHost[strings.HasPrefix(e.rec.Issuer, "https://")]
			for _, k := range e.rec.HostKeys() {
				if hosts[k] == e {
					delete(hosts, k)
				}
			}
		} else {
			issuer := issuers[rng.IntN(len(issuers))]
			e := &recSchool{registry.Record{Issuer: issuer, Disabled: rng.IntN(4) == 0}}
			own := e.rec.HostKeys()[0]
			for _, h := range aliases {
				if h != own && rng.IntN(4) == 0 {
					e.rec.Hosts = append(e.rec.Hosts, h)
				}
			}
			made = append(made, e)
			tb.Add(e)
			bySchool[issuer] = e
			if !e.rec.Disabled {
				hosts := byHost[strings.HasPrefix(issuer, "https://")]
				for _, k := range e.rec.HostKeys() {
					hosts[k] = e
				}
			}
		}
		disabled := 0
		for _, issuer := range issuers {
			want := bySchool[issuer]
			if got := tb.School(issuer); got != want {
				t.Fatalf("step %d: School(%s) = %v, want %v", step, issuer, got, want)
			}
			if want != nil && want.rec.Disabled {
				disabled++
			}
		}
		got := map[string]*recSchool{}
		for issuer, e := range tb.Schools() {
			if _, twice := got[issuer]; twice {
				t.Fatalf("step %d: Schools yields %s twice", step, issuer)
			}
			got[issuer] = e
		}
		if !maps.Equal(got, bySchool) || tb.Len() != len(bySchool) || tb.Disabled() != disabled {
			t.Fatalf("step %d: Schools %v (Len %d, Disabled %d), want %v (%d disabled)", step, got, tb.Len(), tb.Disabled(), bySchool, disabled)
		}
		for _, tls := range []bool{true, false} {
			for _, h := range aliases {
				if got, want := tb.Lookup(h, tls), byHost[tls][h]; got != want {
					t.Fatalf("step %d: Lookup(%s, %v) = %v, want %v", step, h, tls, got, want)
				}
			}
		}
	}
	// Enabled schools on their own hosts: none kept apart.
	tb = NewTable[*recSchool](0)
	for _, issuer := range issuers {
		tb.Add(&recSchool{registry.Record{Issuer: issuer}})
	}
	if tb.apart.n != 0 || tb.Len() != len(issuers) {
		t.Errorf("%d of %d enabled schools kept apart by issuer", tb.apart.n, tb.Len())
	}
}

// Adding a school to a table that owns its nodes makes no garbage of
// its host keys: 100,000 are added at a start.
func TestTableAddAllocatesNothingOfItsKeys(t *testing.T) {
	tb := NewTable[*recSchool](0)
	e := &recSchool{registry.Record{Issuer: "https://a.example", Hosts: []string{"www.a.example"}}}
	tb.Add(e)
	// Added again: its keys held already, the nodes written in place.
	if n := testing.AllocsPerRun(100, func() { tb.Add(e) }); n != 0 {
		t.Errorf("an Add allocates %v times", n)
	}
}
