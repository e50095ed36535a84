package platform

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/registry"
)

// routedSchool answers with its name, or errRetired once retired.
type routedSchool struct {
	rec     registry.Record
	retired bool
	// changed, if set, replaces the school in the table as it is met
	// retired: its record changed after the request's lookup.
	changed func()
}

func (s *routedSchool) Record() *registry.Record { return &s.rec }

func (s *routedSchool) Serve(w http.ResponseWriter, _ *http.Request) error {
	if s.retired {
		if s.changed != nil {
			s.changed()
		}
		return errRetired
	}
	w.Header().Set("X-School", s.rec.Issuer)
	return nil
}

func hostsOf(schools ...*routedSchool) *Hosts[*routedSchool] {
	h := NewHosts[*routedSchool](func() *RegistryFailure { return nil })
	t := NewTable[*routedSchool](len(schools))
	for _, s := range schools {
		t.Add(s)
	}
	h.Set(t)
	return h
}

// A request goes to the school of its host and scheme; a host no school
// answers on is a plain 404.
func TestHostsServe(t *testing.T) {
	a := &routedSchool{rec: registry.Record{Issuer: "https://a.example"}}
	h := hostsOf(a)
	for _, tt := range []struct {
		url, school string
		status      int
	}{
		{"https://a.example/x", "https://a.example", http.StatusOK},
		{"https://A.EXAMPLE:443/x", "https://a.example", http.StatusOK},
		{"http://a.example/x", "", http.StatusNotFound}, // an origin is its scheme too
		{"https://b.example/x", "", http.StatusNotFound},
	} {
		r := httptest.NewRequest(http.MethodGet, tt.url, nil)
		rec := httptest.NewRecorder()
		if err := h.Serve(rec, r, false); err != nil {
			t.Fatal(err)
		}
		if rec.Code != tt.status || rec.Header().Get("X-School") != tt.school {
			t.Errorf("%s: %d by %q, want %d by %q", tt.url, rec.Code, rec.Header().Get("X-School"), tt.status, tt.school)
		}
		if tt.status == http.StatusNotFound && !strings.Contains(rec.Body.String(), "no school is served at this address") {
			t.Errorf("%s: the 404 says %q", tt.url, rec.Body.String())
		}
	}
}

// A request that met a school retired after its lookup is served by the
// school of the table that replaced it; a table that still has the
// retired school is the platform ending: 503, starting.
func TestHostsServeAfterARetire(t *testing.T) {
	old := &routedSchool{rec: registry.Record{Issuer: "https://a.example"}, retired: true}
	h := hostsOf(old)
	rec := httptest.NewRecorder()
	if err := h.Serve(rec, httptest.NewRequest(http.MethodGet, "https://a.example/", nil), false); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("the ending platform's retired school: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	changed := &routedSchool{rec: registry.Record{Issuer: "https://a.example"}}
	old.changed = func() {
		next := h.Load().Clone()
		next.Remove(old)
		next.Add(changed)
		h.Set(next)
	}
	rec = httptest.NewRecorder()
	if err := h.Serve(rec, httptest.NewRequest(http.MethodGet, "https://a.example/", nil), false); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusOK || rec.Header().Get("X-School") != "https://a.example" {
		t.Errorf("the school that replaced the retired one: %d by %q", rec.Code, rec.Header().Get("X-School"))
	}
}

// Before the registry was read a request waits as long as it lasts, then
// is answered 503: starting, or the registry's failure with its
// Retry-After.
func TestHostsServeWithoutATable(t *testing.T) {
	failure := &RegistryFailure{Err: errors.New("down")}
	var failed *RegistryFailure
	h := NewHosts[*routedSchool](func() *RegistryFailure { return failed })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		failure *RegistryFailure
		says    string
	}{
		{nil, "this school is starting"},
		{failure, "the schools of this server cannot be read now"},
	} {
		failed = tt.failure
		rec := httptest.NewRecorder()
		if err := h.Serve(rec, httptest.NewRequest(http.MethodGet, "https://a.example/", nil).WithContext(ctx), false); err != nil {
			t.Fatal(err)
		}
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), tt.says) {
			t.Errorf("no table, failure %v: %d %q %s", tt.failure, rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
}
