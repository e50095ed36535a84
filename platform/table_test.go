package platform

import (
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
	if HostName("[::1]:8443") != "::1" || HostName("a.example") != "a.example" {
		t.Error("HostName")
	}
}
