package caddymodule

import (
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/option"
)

// unmarshalRateLimit reads
//
//	rate_limit off
//	rate_limit <name> <events>/<s|m|h> [<burst>]
func (g *Gateway) unmarshalRateLimit(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if g.RateLimits == nil {
		g.RateLimits = &authserver.RateLimitOptions{}
	}
	if len(args) == 1 && args[0] == "off" {
		g.RateLimits.Off = true
		return nil
	}
	if len(args) < 2 || len(args) > 3 {
		return d.Err("rate_limit: expects off, or <name> <events>/<s|m|h> [<burst>]")
	}
	if !authserver.IsRateLimit(args[0]) {
		return d.Errf("rate_limit: unknown limit %q (known: %s)", args[0], strings.Join(authserver.RateLimitNames, ", "))
	}
	rl, err := parseRate(d, "rate_limit "+args[0], args[1:])
	if err != nil {
		return err
	}
	if g.RateLimits.Limits == nil {
		g.RateLimits.Limits = map[string]option.Rate{}
	}
	g.RateLimits.Limits[args[0]] = rl
	return nil
}

// clientIP is Caddy's idea of the caller's address (it honours the
// server's trusted_proxies), for the rate limits.
func clientIP(r *http.Request) string {
	if ip, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok {
		return ip
	}
	return ""
}
