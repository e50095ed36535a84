package caddymodule

import (
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/schoolgate/schoolgate/option"
	"github.com/schoolgate/schoolgate/school"
)

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
		g.Budget = &school.Budget{}
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

// parseRate reads <events>/<s|m|h> [<burst>] for the option named, as
// option.ParseRate reads it, at the dispenser's line.
func parseRate(d *caddyfile.Dispenser, name string, args []string) (option.Rate, error) {
	r, err := option.ParseRate(name, args)
	if err != nil {
		return option.Rate{}, d.Err(err.Error())
	}
	return r, nil
}
