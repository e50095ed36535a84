package caddymodule

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddytls"

	platformcore "github.com/schoolgate/schoolgate/platform"
	"github.com/schoolgate/schoolgate/registry"
)

func init() {
	caddy.RegisterModule(CertificatePermission{})
}

// CertificatePermission lets on-demand TLS get a certificate only for the
// hosts of the registered, enabled schools of the config's platforms
// (school_platform), so that a client naming any host in its TLS
// handshake cannot make Caddy ask a CA for it:
//
//	on_demand_tls {
//		permission schoolgate
//	}
//
// The answer is a lookup in the platforms' host tables: a school added
// to the registry gets its certificate on its first handshake, one
// removed or disabled gets none from then on.
//
// A refusal is logged at INFO with its reason (Caddy logs it at DEBUG
// only, so that "why has this school no certificate?" had no answer),
// once per host in each minute of the clock, for at most
// platformcore.HostsLoggedPerMinute hosts a minute: a flood of handshakes naming
// random hosts grows neither the memory nor the log.
type CertificatePermission struct {
	app      *App
	log      *slog.Logger
	refusals *platformcore.HostLog
}

// CaddyModule returns the Caddy module information.
func (CertificatePermission) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "tls.permission.schoolgate",
		New: func() caddy.Module { return new(CertificatePermission) },
	}
}

var (
	_ caddytls.OnDemandPermission = (*CertificatePermission)(nil)
	_ caddy.Provisioner           = (*CertificatePermission)(nil)
	_ caddyfile.Unmarshaler       = (*CertificatePermission)(nil)
)

// Provision finds the config's App, whose platforms hold the hosts.
func (c *CertificatePermission) Provision(ctx caddy.Context) error {
	app, err := ctx.App(appName)
	if err != nil {
		return err
	}
	c.app = app.(*App)
	c.log = ctx.Slogger()
	c.refusals = &platformcore.HostLog{Now: time.Now}
	return nil
}

// UnmarshalCaddyfile reads "permission schoolgate", which takes no
// options.
func (c *CertificatePermission) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the module's name
	if d.NextArg() || d.NextBlock(d.Nesting()) {
		return d.Err("permission schoolgate: takes no options")
	}
	return nil
}

// CertificateAllowed answers nil when an enabled school of a platform
// answers on name over https.
func (c *CertificatePermission) CertificateAllowed(_ context.Context, name string) error {
	if c.app.allowsCertificate(name) {
		return nil
	}
	host := hostName(registry.HostKey(name, true))
	switch c.refusals.Admit(host) {
	case platformcore.LogHost:
		// The reason is looked for only here, at most
		// platformcore.HostsLoggedPerMinute times a minute.
		c.log.Info("on-demand certificate refused", "host", host, "reason", c.app.certificateRefusal(host))
	case platformcore.LogFull:
		c.log.Info("on-demand certificates refused for more hosts this minute than are logged: "+
			"the others are logged from the next minute on", "hosts_logged", platformcore.HostsLoggedPerMinute)
	}
	return fmt.Errorf("%s: %w: no school of this server answers on it", name, caddytls.ErrPermissionDenied)
}

// allowsCertificate reports whether a platform of the config has an
// enabled https school answering on name.
func (a *App) allowsCertificate(name string) bool {
	list := a.platformList.Load()
	if list == nil {
		return false
	}
	for _, p := range *list {
		if t := p.tables.Load(); t != nil && t.AllowsCertificate(name) {
			return true
		}
	}
	return false
}

// certificateRefusal says why no certificate is given for host (a name
// allowsCertificate refused): a disabled school answers on it, or a
// school of an http issuer only, or none. It looks through every record
// of the platforms, so it is asked once per logged refusal only.
func (a *App) certificateRefusal(host string) string {
	list := a.platformList.Load()
	if list == nil || len(*list) == 0 {
		return "not registered: no school_platform is configured"
	}
	unread := false
	for _, p := range *list {
		t := p.tables.Load()
		if t == nil {
			unread = true
			continue
		}
		for _, e := range t.Schools() {
			if e.rec.Disabled && answersOn(e.rec, host) {
				return "disabled: " + e.rec.Issuer + " answers on it, and is disabled in the registry"
			}
		}
		if e, ok := t.HTTPOn(host); ok {
			return "http only: " + e.rec.Issuer + " answers on it over http, and gets no certificate"
		}
	}
	if unread {
		return "not registered: a platform's registry is not read yet"
	}
	return "not registered: no school of the registry answers on it"
}

// answersOn reports whether a record names host, whatever the port.
func answersOn(r *registry.Record, host string) bool {
	for _, key := range r.HostKeys() {
		if hostName(key) == host {
			return true
		}
	}
	return false
}
