package caddymodule

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/school"
)

// Budget is a school's own limits, whatever its neighbours do: a rate
// for all its requests, a rate for its anonymous /mcp calls (every
// caller together; rate_limit mcp_anonymous is the limit per address),
// how many requests may be in flight to its legacy server at once, and
// how long each waits for its answer. An exhausted rate is answered 429
// with Retry-After in the shape of the endpoint asked, a legacy server
// with no place left 503 with Retry-After, one that does not answer in
// time 504 (docs/operator.md, "Fair share and budgets").
type Budget struct {
	// Requests is the rate of all the school's requests but its
	// discovery documents and JWKS. Default: none.
	Requests *RateLimit `json:"requests,omitempty"`
	// MCPAnonymous is the rate of the school's anonymous /mcp calls, all
	// callers together. Default: none.
	MCPAnonymous *RateLimit `json:"mcp_anonymous,omitempty"`
	// LegacyConcurrency is how many requests may wait on the legacy
	// server at once. Default: school.DefaultLegacyConcurrency.
	LegacyConcurrency int `json:"legacy_concurrency,omitempty"`
	// LegacyTimeout is how long a request waits for the legacy server's
	// response header: the response-header timeout of the proxy's
	// transport, where the configuration sets none itself
	// (legacytimeout.go). Default: 60s.
	LegacyTimeout caddy.Duration `json:"legacy_timeout,omitempty"`
}

// validateBudget checks the weight and the budget, naming the option.
func (g *Gateway) validateBudget() error {
	if g.Weight < 0 {
		return fmt.Errorf("weight: %d is not a positive number", g.Weight)
	}
	b := g.Budget
	if b == nil {
		return nil
	}
	for _, r := range []struct {
		name string
		rl   *RateLimit
	}{{"budget requests", b.Requests}, {"budget mcp_anonymous", b.MCPAnonymous}} {
		if r.rl != nil && (r.rl.Events <= 0 || r.rl.Period <= 0 || r.rl.Burst < 0) {
			return fmt.Errorf("%s: needs a positive rate and a burst of at least 1", r.name)
		}
	}
	if b.LegacyConcurrency < 0 {
		return fmt.Errorf("budget legacy_concurrency: %d is not a positive number", b.LegacyConcurrency)
	}
	if b.LegacyTimeout < 0 {
		return fmt.Errorf("budget legacy_timeout: %s is not a positive duration", time.Duration(b.LegacyTimeout))
	}
	return nil
}

// schoolBudget is the budget as the school takes it.
func (g *Gateway) schoolBudget() school.Budget {
	if g.Budget == nil {
		return school.Budget{}
	}
	return school.Budget{Requests: g.Budget.Requests.limit(), MCPAnonymous: g.Budget.MCPAnonymous.limit(),
		LegacyConcurrency: g.Budget.LegacyConcurrency}
}

// limit is the rate as authserver's limiters take it; nil is none.
func (rl *RateLimit) limit() authserver.Limit {
	if rl == nil {
		return authserver.Limit{}
	}
	burst := rl.Burst
	if burst == 0 {
		burst = rl.Events
	}
	return authserver.Per(rl.Events, time.Duration(rl.Period), burst)
}

// unmarshalWeight reads weight <n>.
func (g *Gateway) unmarshalWeight(d *caddyfile.Dispenser) error {
	var s string
	if err := oneArg(d, "weight", &s); err != nil {
		return err
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return d.Errf("weight: %q is not a positive number", s)
	}
	g.Weight = n
	return nil
}

// unmarshalBudget reads
//
//	budget {
//		requests           <events>/<s|m|h> [<burst>]
//		mcp_anonymous      <events>/<s|m|h> [<burst>]
//		legacy_concurrency <n>
//		legacy_timeout     <duration>
//	}
func (g *Gateway) unmarshalBudget(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.Err("budget: options go in a block")
	}
	if g.Budget == nil {
		g.Budget = &Budget{}
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		switch opt {
		case "requests", "mcp_anonymous":
			rl, err := parseRate(d, "budget "+opt, d.RemainingArgs())
			if err != nil {
				return err
			}
			if opt == "requests" {
				g.Budget.Requests = &rl
			} else {
				g.Budget.MCPAnonymous = &rl
			}
		case "legacy_concurrency":
			var s string
			if err := oneArg(d, "budget legacy_concurrency", &s); err != nil {
				return err
			}
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return d.Errf("budget legacy_concurrency: %q is not a positive number", s)
			}
			g.Budget.LegacyConcurrency = n
		case "legacy_timeout":
			if err := durationArg(d, "budget legacy_timeout", &g.Budget.LegacyTimeout); err != nil {
				return err
			}
		default:
			return d.Errf("budget: unknown option %q (known: requests, mcp_anonymous, legacy_concurrency, legacy_timeout)", opt)
		}
	}
	return nil
}

// parseRate reads <events>/<s|m|h> [<burst>] for the option named.
func parseRate(d *caddyfile.Dispenser, name string, args []string) (RateLimit, error) {
	if len(args) < 1 || len(args) > 2 {
		return RateLimit{}, d.Errf("%s: expects <events>/<s|m|h> [<burst>]", name)
	}
	n, unit, ok := strings.Cut(args[0], "/")
	events, err := strconv.Atoi(n)
	period := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	if !ok || err != nil || events <= 0 || period == 0 {
		return RateLimit{}, d.Errf("%s: %q is not <events>/<s|m|h>, e.g. 30/m", name, args[0])
	}
	burst := events
	if len(args) == 2 {
		if burst, err = strconv.Atoi(args[1]); err != nil || burst < 1 {
			return RateLimit{}, d.Errf("%s: burst %q is not a positive number", name, args[1])
		}
	}
	return RateLimit{Events: events, Period: caddy.Duration(period), Burst: burst}, nil
}
