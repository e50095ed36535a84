package registry

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unsafe"
)

// The issuer's host key is a part of the issuer's string, not a copy, when
// the issuer is spelled as its key (a checked record's): the host tables
// keep one for each of their schools. Spelled otherwise, it is its key.
func TestHostKeysShareTheIssuer(t *testing.T) {
	for _, tt := range []struct {
		issuer, want string
		shared       bool
	}{
		{"http://s1.localhost:8080", "s1.localhost:8080", true},
		{"https://school.example", "school.example", true},
		{"https://[::1]:8443", "[::1]:8443", true},
		{"https://School.example:443", "school.example", false},
	} {
		r := Record{Issuer: tt.issuer, Hosts: []string{"www.school.example"}}
		keys := r.HostKeys()
		if len(keys) != 2 || keys[0] != tt.want || keys[1] != "www.school.example" {
			t.Errorf("%s: keys %q", tt.issuer, keys)
			continue
		}
		start := uintptr(unsafe.Pointer(unsafe.StringData(r.Issuer)))
		at := uintptr(unsafe.Pointer(unsafe.StringData(keys[0])))
		if shared := at >= start && at < start+uintptr(len(r.Issuer)); shared != tt.shared {
			t.Errorf("%s: the key shares the issuer's bytes: %v, want %v", tt.issuer, shared, tt.shared)
		}
	}
}

func TestHostKey(t *testing.T) {
	for _, tt := range []struct {
		in   string
		tls  bool
		want string
	}{
		{"school.example", true, "school.example"},
		{"School.Example", true, "school.example"},
		{"school.example.", true, "school.example"},
		{"SCHOOL.example.:443", true, "school.example"},
		{"school.example:0443", true, "school.example"},
		{"school.example:443", false, "school.example:443"},
		{"school.example:80", false, "school.example"},
		{"school.example:8443", true, "school.example:8443"},
		{"[::1]:443", true, "[::1]"},
		{"[::1]:8443", true, "[::1]:8443"},
		{"[::1]", false, "[::1]"},
		{"127.0.0.1:80", false, "127.0.0.1"},
		{"éCOLE.example", true, "école.example"},
		{"école.example", true, "école.example"},
		{"a", true, "a"},
		{".", true, ""},
	} {
		if got := HostKey(tt.in, tt.tls); got != tt.want {
			t.Errorf("HostKey(%q, %v) = %q, want %q", tt.in, tt.tls, got, tt.want)
		}
	}
	// A name in its one spelling, as a checked record's issuer has it,
	// allocates nothing: 100,000 schools' tables ask for it.
	if n := testing.AllocsPerRun(100, func() { _ = HostKey("school.example", true) }); n != 0 {
		t.Errorf("HostKey of a name in its spelling allocates %v times", n)
	}
}

func TestRecordCheck(t *testing.T) {
	cfg := json.RawMessage(`{"upstream":"http://127.0.0.1:9080"}`)
	good := Record{Issuer: "HTTPS://School.Example:443/", Hosts: []string{"WWW.School.Example.", "school.example:8443"}, Config: cfg}
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	if good.Issuer != "https://school.example" || strings.Join(good.Hosts, " ") != "www.school.example school.example:8443" {
		t.Errorf("checked record: %+v", good)
	}
	if keys := good.HostKeys(); strings.Join(keys, " ") != "school.example www.school.example school.example:8443" {
		t.Errorf("HostKeys = %v", keys)
	}
	for _, tt := range []struct {
		name string
		r    Record
		want string
	}{
		{"no issuer", Record{Config: cfg}, "issuer:"},
		{"issuer with a path", Record{Issuer: "https://school.example/x", Config: cfg}, "issuer:"},
		{"the issuer's host as an alias", Record{Issuer: "https://school.example", Hosts: []string{"School.Example:443"}, Config: cfg}, "named twice"},
		{"an alias twice", Record{Issuer: "https://school.example", Hosts: []string{"a.example", "A.example."}, Config: cfg}, "named twice"},
		{"an alias with a path", Record{Issuer: "https://school.example", Hosts: []string{"a.example/x"}, Config: cfg}, "not a host name"},
		{"an empty alias", Record{Issuer: "https://school.example", Hosts: []string{""}, Config: cfg}, "not a host name"},
		{"no config", Record{Issuer: "https://school.example"}, "config:"},
		{"a config that is no object", Record{Issuer: "https://school.example", Config: json.RawMessage(`[1]`)}, "config:"},
		{"a null config", Record{Issuer: "https://school.example", Config: json.RawMessage(`null`)}, "config:"},
	} {
		err := tt.r.Check()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
}

func TestHostTakenError(t *testing.T) {
	err := error(&HostTakenError{Host: "www.school.example", Owner: "https://other.example"})
	if !errors.Is(err, ErrHostTaken) || !strings.Contains(err.Error(), "https://other.example") {
		t.Errorf("%v", err)
	}
}

// IssuerKey is a record's first host key, for the platform's table as for
// HostKeys; spelled as its issuer's host, it is that part of the issuer's
// string, not a copy.
func TestIssuerKey(t *testing.T) {
	for _, c := range []struct {
		issuer, key string
		tls, ok     bool
	}{
		{"https://a.example", "a.example", true, true},
		{"http://a.example:8080", "a.example:8080", false, true},
		{"https://A.Example", "a.example", true, true},
		{"https://a.example:443", "a.example", true, true},
		{"a.example", "", false, false},
	} {
		key, tls, ok := IssuerKey(c.issuer)
		if key != c.key || tls != c.tls || ok != c.ok {
			t.Errorf("IssuerKey(%q) = %q, %v, %v; want %q, %v, %v", c.issuer, key, tls, ok, c.key, c.tls, c.ok)
		}
		if r := (&Record{Issuer: c.issuer}); c.ok && r.HostKeys()[0] != key {
			t.Errorf("%q: HostKeys()[0] %q, IssuerKey %q", c.issuer, r.HostKeys()[0], key)
		}
	}
	issuer := "http://a.example:8080"
	key, _, _ := IssuerKey(issuer)
	if unsafe.StringData(key) != unsafe.StringData(issuer[len("http://"):]) {
		t.Error("the key of an issuer spelled alike is a copy")
	}
}
