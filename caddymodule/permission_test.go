package caddymodule

import (
	"errors"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/modules/caddytls"
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
