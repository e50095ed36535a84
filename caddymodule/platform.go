package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	caddy.RegisterModule(Platform{})
	httpcaddyfile.RegisterHandlerDirective("school_platform", parseSchoolPlatform)
	httpcaddyfile.RegisterDirectiveOrder("school_platform", httpcaddyfile.Before, "reverse_proxy")
}

// Platform is the school_platform handler: the schools of a registry
// (package registry), each its own origin, served by one handler that
// finds the school by the request's host. Schools are added, changed and
// removed in the registry, without a reload; each is built on its first
// request and let go of when it has not been used for a while and more
// than MaxActive are built.
type Platform struct {
	// Registry is where the schools are written. Required.
	Registry PlatformRegistry `json:"registry"`
	// MaxActive bounds the schools built at once (store open, keys
	// loaded): past it, the least recently used without a request in
	// flight are let go of. Default: 1000.
	MaxActive int `json:"max_active,omitempty"`

	// plat is the config's platform of the registry (platformrun.go),
	// shared by the handlers that configure it alike.
	plat *platform
}

// PlatformRegistry names a registry; exactly one kind is set.
type PlatformRegistry struct {
	// Dir keeps one JSON file per school in a directory, and each
	// school's bbolt store under it, unless the school sets data: for a
	// platform on one host.
	Dir string `json:"dir,omitempty"`
	// Postgres keeps the records in a PostgreSQL database, which also
	// keeps the schools' stores (with KeySecret): for a platform of
	// several instances.
	Postgres *PostgresStore `json:"postgres,omitempty"`
}

// defaultMaxActive is MaxActive when the configuration gives none.
const defaultMaxActive = 1000

// CaddyModule returns the Caddy module information.
func (Platform) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.school_platform",
		New: func() caddy.Module { return new(Platform) },
	}
}

var (
	_ caddy.Provisioner           = (*Platform)(nil)
	_ caddy.Validator             = (*Platform)(nil)
	_ caddy.CleanerUpper          = (*Platform)(nil)
	_ caddyhttp.MiddlewareHandler = (*Platform)(nil)
	_ caddyfile.Unmarshaler       = (*Platform)(nil)
)

// Provision checks the configuration and registers the platform with the
// App, and does nothing else: no registry is opened, no store, for Caddy
// provisions configs it does not run (caddy validate). The App's Start
// opens the registry and reads it (platformrun.go).
func (h *Platform) Provision(ctx caddy.Context) error {
	if h.MaxActive == 0 {
		h.MaxActive = defaultMaxActive
	}
	if h.Registry.Dir != "" {
		if abs, err := filepath.Abs(h.Registry.Dir); err == nil {
			h.Registry.Dir = abs
		}
	}
	if err := h.Validate(); err != nil {
		return err
	}
	app, err := ctx.App(appName)
	if err != nil {
		return err
	}
	h.plat, err = app.(*App).registerPlatform(ctx, h)
	return err
}

// Validate checks the configuration without reaching the registry; every
// message names the option at fault.
func (h *Platform) Validate() error {
	if h.MaxActive < 0 {
		return fmt.Errorf("max_active: %d must be positive", h.MaxActive)
	}
	r := h.Registry
	switch {
	case r.Dir != "" && r.Postgres != nil:
		return errors.New("registry: one kind only: dir or postgres")
	case r.Dir == "" && r.Postgres == nil:
		return errors.New("registry: is required: registry dir <path> or registry postgres <dsn> { key_secret <secret> }")
	case r.Postgres != nil:
		return r.Postgres.check("registry postgres")
	}
	return nil
}

// describe names the registry for the operator, without the DSN.
func (r PlatformRegistry) describe() string {
	if r.Postgres != nil {
		return "postgres"
	}
	return "dir " + r.Dir
}

// ServeHTTP hands the request to the platform (platform.Hosts), which
// serves it by the school of its host; a host no enabled school has is
// answered 404. A request that arrives before the App's Start read the
// registry waits for it, as long as it lasts.
func (h *Platform) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	return handlerError(h.plat.tables.Serve(w, r, trustedProxy(r)))
}

// trustedProxy reports whether the request came from a proxy the
// server trusts (its trusted_proxies, which Caddy has judged the request
// by already): only then does its Forwarded proto count (platform.HTTPS).
func trustedProxy(r *http.Request) bool {
	trusted, _ := caddyhttp.GetVar(r.Context(), caddyhttp.TrustedProxyVarKey).(bool)
	return trusted
}

// Cleanup lets go of the platform when its last handler ends.
func (h *Platform) Cleanup() error {
	if h.plat == nil {
		return nil
	}
	return h.plat.release()
}

// parseSchoolPlatform reads the school_platform directive.
func parseSchoolPlatform(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	p := new(Platform)
	if err := p.UnmarshalCaddyfile(h.Dispenser); err != nil {
		return nil, err
	}
	return p, nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens:
//
//	school_platform {
//		registry dir <path>
//		registry postgres <dsn> {
//			key_secret <secret>
//		}
//		max_active <n>
//	}
func (h *Platform) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.Errf("school_platform: unexpected argument %q; options go in a block", d.Val())
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "registry":
			if err := h.unmarshalRegistry(d); err != nil {
				return err
			}
		case "max_active":
			var s string
			if err := oneArg(d, "max_active", &s); err != nil {
				return err
			}
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return d.Errf("max_active: %q is not a positive number", s)
			}
			h.MaxActive = n
		default:
			return d.Errf("school_platform: unknown option %q", d.Val())
		}
	}
	if h.Registry.Dir == "" && h.Registry.Postgres == nil {
		return d.Err("school_platform: registry is required: registry dir <path> or registry postgres <dsn> { key_secret <secret> }")
	}
	return nil
}

// unmarshalRegistry reads registry dir <path> or registry postgres <dsn>
// { key_secret <secret> }.
func (h *Platform) unmarshalRegistry(d *caddyfile.Dispenser) error {
	if h.Registry.Dir != "" || h.Registry.Postgres != nil {
		return d.Err("registry: only one registry")
	}
	args := d.RemainingArgs()
	if len(args) == 0 {
		return d.Err("registry: expects a kind: registry dir <path> or registry postgres <dsn> { key_secret <secret> }")
	}
	switch args[0] {
	case "dir":
		if len(args) != 2 {
			return d.Err("registry dir: expects one path")
		}
		if d.NextBlock(d.Nesting()) {
			return d.Err("registry dir: takes no block")
		}
		h.Registry.Dir = args[1]
	case "postgres":
		pg, err := parsePostgres(d, args[1:], "registry postgres")
		if err != nil {
			return err
		}
		h.Registry.Postgres = pg
	default:
		return d.Errf("registry: unknown kind %q; the kinds are: dir, postgres", args[0])
	}
	return nil
}
