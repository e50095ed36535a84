package caddymodule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/modules/caddytls"

	platformcore "github.com/schoolgate/schoolgate/platform"
)

// On-demand TLS gets a certificate for the hosts of registered, enabled
// https schools only, in any spelling of the name, from the moment the
// record is written to the moment it is removed or disabled.
func TestCertificatePermission(t *testing.T) {
	tp := newTestPlatform(t, 10)
	tp.put(t, "https://a.example", []string{"www.a.example", "alt.example:8443"}, "")
	tp.put(t, "http://plain.example", nil, "")
	off := tp.put(t, "https://off.example", nil, "")
	off.Disabled = true
	if _, err := tp.reg.Put(t.Context(), off); err != nil {
		t.Fatal(err)
	}
	perm := new(CertificatePermission)
	if err := perm.Provision(tp.platform.ctx); err != nil {
		t.Fatal(err)
	}
	check := func(name string, allowed bool) {
		t.Helper()
		err := perm.CertificateAllowed(t.Context(), name)
		if allowed && err != nil || !allowed && !errors.Is(err, caddytls.ErrPermissionDenied) {
			t.Errorf("%s: %v, want allowed %v", name, err, allowed)
		}
	}
	for _, name := range []string{"a.example", "A.Example.", "www.a.example", "alt.example"} {
		check(name, true)
	}
	for _, name := range []string{"off.example", "plain.example", "unknown.example", "example", "sub.a.example", ""} {
		check(name, false)
	}
	if tp.activeCount() != 0 {
		t.Error("a permission built a school")
	}
	if err := tp.reg.Remove(t.Context(), "https://a.example"); err != nil {
		t.Fatal(err)
	}
	check("a.example", false)
	check("www.a.example", false)
	off.Disabled = false
	if _, err := tp.reg.Put(t.Context(), off); err != nil {
		t.Fatal(err)
	}
	check("off.example", true)
}

// The permission takes no options.
func TestCertificatePermissionCaddyfile(t *testing.T) {
	_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte("{\n\ton_demand_tls {\n\t\tpermission schoolgate extra\n\t}\n}\n"), nil)
	if err == nil {
		t.Error("an argument to permission schoolgate was taken")
	}
}

// A refused on-demand certificate is logged at INFO with its reason, once
// per host in each minute of the clock; a flood of handshakes naming
// random hosts logs at most platformcore.HostsLoggedPerMinute of them a minute and
// one line saying the others are not, and the log's memory holds no more
// hosts than that.
func TestCertificateRefusalLogged(t *testing.T) {
	tp := newTestPlatform(t, 10)
	tp.put(t, "https://a.example", []string{"www.a.example"}, "")
	tp.put(t, "http://plain.example:8080", nil, "")
	off := tp.put(t, "https://off.example", []string{"alias.off.example"}, "")
	off.Disabled = true
	if _, err := tp.reg.Put(t.Context(), off); err != nil {
		t.Fatal(err)
	}
	perm := new(CertificatePermission)
	if err := perm.Provision(tp.platform.ctx); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	perm.log = slog.New(slog.NewJSONHandler(&logged, nil)) // INFO and above, as Caddy's default
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	perm.refusals.Now = func() time.Time { return clock }
	lines := func() []map[string]any {
		t.Helper()
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
			if l == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			out = append(out, m)
		}
		logged.Reset()
		return out
	}

	for _, tt := range []struct {
		name       string
		after      time.Duration // the clock moves on first
		handshakes []string
		// want is each line's host and the start of its reason.
		want [][2]string
	}{
		{"disabled", 0, []string{"off.example", "Off.Example.", "alias.off.example"},
			[][2]string{{"off.example", "disabled: https://off.example answers on it"}, {"alias.off.example", "disabled: https://off.example"}}},
		{"http only", 0, []string{"plain.example", "plain.example"}, [][2]string{{"plain.example", "http only: http://plain.example:8080"}}},
		{"not registered", 0, []string{"unknown.example"}, [][2]string{{"unknown.example", "not registered: no school of the registry answers on it"}}},
		{"allowed", 0, []string{"a.example", "www.a.example"}, nil},
		{"the same minute", 59 * time.Second, []string{"off.example", "unknown.example"}, nil},
		{"the next minute", time.Second, []string{"off.example", "off.example"}, [][2]string{{"off.example", "disabled"}}},
	} {
		clock = clock.Add(tt.after)
		for _, h := range tt.handshakes {
			_ = perm.CertificateAllowed(t.Context(), h)
		}
		got := lines()
		if len(got) != len(tt.want) {
			t.Errorf("%s: %d lines, want %d: %v", tt.name, len(got), len(tt.want), got)
			continue
		}
		for i, w := range tt.want {
			reason, _ := got[i]["reason"].(string)
			if got[i]["level"] != "INFO" || got[i]["msg"] != "on-demand certificate refused" || got[i]["host"] != w[0] ||
				!strings.HasPrefix(reason, w[1]) {
				t.Errorf("%s: %v, want host %s and a reason starting %q at INFO", tt.name, got[i], w[0], w[1])
			}
		}
	}

	// A flood of random names.
	clock = clock.Add(time.Minute)
	for i := range 10 * platformcore.HostsLoggedPerMinute {
		_ = perm.CertificateAllowed(t.Context(), fmt.Sprintf("random-%d.example", i))
	}
	got := lines()
	if len(got) != platformcore.HostsLoggedPerMinute+1 || !strings.Contains(got[len(got)-1]["msg"].(string), "more hosts this minute than are logged") {
		t.Errorf("a flood of %d hosts: %d lines, want %d and one saying the others are not logged", 10*platformcore.HostsLoggedPerMinute,
			len(got), platformcore.HostsLoggedPerMinute+1)
	}
	if n := perm.refusals.Len(); n > platformcore.HostsLoggedPerMinute {
		t.Errorf("the log holds %d hosts", n)
	}
	clock = clock.Add(time.Minute)
	_ = perm.CertificateAllowed(t.Context(), "random-0.example")
	if got := lines(); len(got) != 1 || got[0]["host"] != "random-0.example" {
		t.Errorf("the minute after the flood: %v", got)
	}
	if n := perm.refusals.Len(); n != 1 {
		t.Errorf("the log holds %d hosts after the minute changed", n)
	}
}
