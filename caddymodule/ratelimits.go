package caddymodule

import (
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/schoolgate/schoolgate/authserver"
)

// RateLimits configures the abuse limits of the OAuth endpoints (see
// authserver.RateLimits). Off disables every limit; each named limit
// overrides the default.
type RateLimits struct {
	// Off disables every limit. Default: false.
	Off bool `json:"off,omitempty"`
	// Limits by name (register, new_clients, authorize, token,
	// token_client, revoke, mcp_anonymous). Default: the built-in value
	// of each.
	Limits map[string]RateLimit `json:"limits,omitempty"`
}

// RateLimit is "Events per Period, with a Burst".
type RateLimit struct {
	// Events allowed per Period. Required, positive.
	Events int `json:"events"`
	// Period of the rate. Required, positive.
	Period caddy.Duration `json:"period"`
	// Burst is how many events may come at once. Default: Events.
	Burst int `json:"burst,omitempty"`
}

// rateLimitNames are the limits an operator can set, and where each goes.
var rateLimitNames = map[string]func(*authserver.RateLimits) *authserver.Limit{
	"register":     func(l *authserver.RateLimits) *authserver.Limit { return &l.Register },
	"new_clients":  func(l *authserver.RateLimits) *authserver.Limit { return &l.NewClients },
	"authorize":    func(l *authserver.RateLimits) *authserver.Limit { return &l.Authorize },
	"token":        func(l *authserver.RateLimits) *authserver.Limit { return &l.Token },
	"token_client": func(l *authserver.RateLimits) *authserver.Limit { return &l.TokenClient },
	"revoke":       func(l *authserver.RateLimits) *authserver.Limit { return &l.Revoke },
	// Anonymous /mcp calls, per address (school applies it).
	"mcp_anonymous": func(l *authserver.RateLimits) *authserver.Limit { return &l.MCPAnonymous },
}

// authserverLimits turns the configuration into the server's limits.
func (g *Gateway) authserverLimits() *authserver.RateLimits {
	l := authserver.DefaultRateLimits
	if g.RateLimits == nil {
		return &l
	}
	if g.RateLimits.Off {
		return &authserver.RateLimits{}
	}
	for name, rl := range g.RateLimits.Limits {
		if field, ok := rateLimitNames[name]; ok {
			burst := rl.Burst
			if burst == 0 {
				burst = rl.Events // as the Caddyfile defaults it
			}
			*field(&l) = authserver.Per(rl.Events, time.Duration(rl.Period), burst)
		}
	}
	return &l
}

// validateRateLimits checks names and values (the JSON config can carry
// anything).
func (g *Gateway) validateRateLimits() error {
	if g.RateLimits == nil {
		return nil
	}
	for name, rl := range g.RateLimits.Limits {
		if _, ok := rateLimitNames[name]; !ok {
			return fmt.Errorf("rate_limit: unknown limit %q (known: register, new_clients, authorize, token, token_client, revoke, mcp_anonymous)", name)
		}
		if rl.Events <= 0 || rl.Period <= 0 || rl.Burst < 0 {
			return fmt.Errorf("rate_limit %s: needs a positive rate and a burst of at least 1", name)
		}
	}
	return nil
}

// unmarshalRateLimit reads
//
//	rate_limit off
//	rate_limit <name> <events>/<s|m|h> [<burst>]
func (g *Gateway) unmarshalRateLimit(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if g.RateLimits == nil {
		g.RateLimits = &RateLimits{}
	}
	if len(args) == 1 && args[0] == "off" {
		g.RateLimits.Off = true
		return nil
	}
	if len(args) < 2 || len(args) > 3 {
		return d.Err("rate_limit: expects off, or <name> <events>/<s|m|h> [<burst>]")
	}
	if _, ok := rateLimitNames[args[0]]; !ok {
		return d.Errf("rate_limit: unknown limit %q (known: register, new_clients, authorize, token, token_client, revoke, mcp_anonymous)", args[0])
	}
	rl, err := parseRate(d, "rate_limit "+args[0], args[1:])
	if err != nil {
		return err
	}
	if g.RateLimits.Limits == nil {
		g.RateLimits.Limits = map[string]RateLimit{}
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
