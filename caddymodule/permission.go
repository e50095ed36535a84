package caddymodule

import (
	"context"
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddytls"
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
type CertificatePermission struct {
	app *App
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
		if t := p.tables.state.Load(); t != nil && t.allowsCertificate(name) {
			return true
		}
	}
	return false
}
