package caddymodule

import (
	"net/http/httptest"
	"testing"

	"github.com/schoolgate/schoolgate/metrics"
)

// protectedPath is a protected resource: a GET of it (which the policy
// refuses) is counted, denied_by_policy, and answered by the gateway, not
// the legacy server.
const protectedPath = "/account/graphql"

// seriesOf counts the platform's metric series of a school.
func (tp *testPlatform) seriesOf(t *testing.T, issuer string) int {
	t.Helper()
	families, err := tp.ctx.GetMetricsRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "site" && l.GetValue() == issuer {
					n++
				}
			}
		}
	}
	return n
}

// A school removed from the registry leaves no metric series, even one
// counted by a request still in flight when it was removed; a school let
// go of past max_active, changed or disabled keeps its series while its
// record is there, and a school added again under a removed one's issuer
// counts anew.
func TestPlatformMetricsOfRemovedSchool(t *testing.T) {
	tp := newTestPlatform(t, 2, func(tp *testPlatform) { tp.app.MetricsPerSchool = metrics.PerSchoolAll })
	for _, s := range []string{"a", "b", "c", "d"} {
		tp.put(t, "https://"+s+".example", nil, "")
	}
	for _, s := range []string{"a", "b", "c", "d"} {
		tp.do(t, "https://"+s+".example"+protectedPath) // counted
		if tp.seriesOf(t, "https://"+s+".example") == 0 {
			t.Fatalf("%s counts nothing", s)
		}
	}
	if tp.school("https://a.example").IsActive() {
		t.Fatal("a was not let go of past max_active")
	}
	c := tp.put(t, "https://c.example", nil, `,"code_ttl":"30s"`)
	c.Disabled = true
	if _, err := tp.reg.Put(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a", "c"} {
		if tp.seriesOf(t, "https://"+s+".example") == 0 {
			t.Errorf("%s, its record there, lost its series", s)
		}
	}

	// d is removed with a request in flight, which counts after.
	release := tp.upstream.hold("https://d.example")
	done := make(chan struct{})
	go func() {
		defer close(done)
		tp.serve(httptest.NewRecorder(), platformRequest("https://d.example/courses"))
	}()
	<-tp.upstream.entered
	d := tp.school("https://d.example").Active().Built()
	for _, s := range []string{"a", "c", "d"} {
		if err := tp.reg.Remove(t.Context(), "https://"+s+".example"); err != nil {
			t.Fatal(err)
		}
	}
	d.observe.Refused("token", "invalid_grant")
	release()
	<-done
	for _, s := range []string{"a", "c", "d"} {
		if n := tp.seriesOf(t, "https://"+s+".example"); n != 0 {
			t.Errorf("%s removed keeps %d series", s, n)
		}
	}
	if tp.seriesOf(t, "https://b.example") == 0 {
		t.Error("b lost its series with the others")
	}
	tp.put(t, "https://a.example", nil, "")
	tp.do(t, "https://a.example"+protectedPath)
	if tp.seriesOf(t, "https://a.example") == 0 {
		t.Error("a added again counts nothing")
	}
}

// A platform's schools have no series of their own by default: their
// events are counted in the instance's totals, whose series are as many
// with one school as with many.
func TestPlatformMetricsDefault(t *testing.T) {
	tp := newTestPlatform(t, 10)
	for _, s := range []string{"a", "b", "c"} {
		tp.put(t, "https://"+s+".example", nil, "")
		tp.do(t, "https://"+s+".example"+protectedPath)
		if n := tp.seriesOf(t, "https://"+s+".example"); n != 0 {
			t.Errorf("%s has %d series of its own", s, n)
		}
	}
	families, err := tp.ctx.GetMetricsRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "schoolgate_protected_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if l := m.GetLabel(); len(l) == 1 && l[0].GetValue() == "denied_by_policy" && m.GetCounter().GetValue() == 3 {
				return
			}
		}
	}
	t.Error("the three refused requests are not in schoolgate_protected_requests_total{outcome=\"denied_by_policy\"}")
}
