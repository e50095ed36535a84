// Package caddymodule is the Caddy adapter of schoolgate: the
// school_gateway HTTP handler and Caddyfile directive with their
// configuration, the app that builds and keeps the schools (package
// school) with their stores, the reverse proxy to the legacy server,
// metrics, and the admin and CLI glue. A request is routed by the school;
// the protocol logic lives in authserver, policy, catalog and mcpserver.
package caddymodule

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/schoolgate/schoolgate/school"
)

func init() {
	caddy.RegisterModule(Gateway{})
}

// Gateway is the school_gateway handler: one school site's authorization
// server, protected-resource checks, MCP server and documents, in front of
// the legacy school server (the upstream). Its JSON is the school's
// options (school.Options, declared once, with their defaults and
// checks) and what is Caddy's alone: where the school's state is kept,
// and (Caddyfile only) the upstream block. A registry record of the
// platform is the same JSON.
type Gateway struct {
	school.Options

	// Data is the directory of the site's bbolt file (keys, clients,
	// tokens, catalog). Default: <Caddy's data directory>/schoolgate/<host_port>
	// of the issuer (datadir.go).
	Data string `json:"data,omitempty"`
	// Store keeps the site in a database instead of the bbolt file, so
	// that several Caddy instances serve it as one; not together with
	// Data. Default: none (bbolt).
	Store *StoreConfig `json:"store,omitempty"`

	// key names the school's state in the site pool (sitepool.go).
	key string

	// upstreamBlock is the Caddyfile's upstream block, handed to
	// reverse_proxy's unmarshaler when the directive expands; in JSON
	// the reverse_proxy handler is configured directly.
	upstreamBlock caddyfile.Segment

	// adminOpenAPI is the admin OpenAPI file's content, read by
	// Provision.
	adminOpenAPI []byte
	// ctx is the config's context, with which the App's Start builds the
	// school (start.go).
	ctx caddy.Context
	// run is what serves, once the App's Start has built it.
	run *gatewayRun
}

// CaddyModule returns the Caddy module information.
func (Gateway) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.school_gateway",
		New: func() caddy.Module { return new(Gateway) },
	}
}

var (
	_ caddy.Provisioner           = (*Gateway)(nil)
	_ caddy.Validator             = (*Gateway)(nil)
	_ caddy.CleanerUpper          = (*Gateway)(nil)
	_ caddyhttp.MiddlewareHandler = (*Gateway)(nil)
)

// Validate checks the configuration before anything is served: the
// school's options as school.Options.Check checks them (a registry
// record is checked by the same function), and where its state is kept.
// Every message names the option at fault.
func (g *Gateway) Validate() error {
	if err := g.Options.Check(); err != nil {
		return err
	}
	return g.validateStore()
}
