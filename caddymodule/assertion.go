package caddymodule

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/schoolgate/schoolgate/school"
)

// unmarshalIdentityAssertion parses
//
//	identity_assertion on|off [{
//		audience <string>
//	}]
func (g *Gateway) unmarshalIdentityAssertion(d *caddyfile.Dispenser) error {
	var on bool
	if err := onOff(d, "identity_assertion", &on); err != nil {
		return err
	}
	ia := &school.IdentityAssertion{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch {
		case !on:
			return d.Err("identity_assertion off: takes no block")
		case d.Val() != "audience":
			return d.Errf("identity_assertion: unknown option %q", d.Val())
		case ia.Audience != "":
			return d.Err("identity_assertion audience: given twice")
		}
		if err := oneArg(d, "identity_assertion audience", &ia.Audience); err != nil {
			return err
		}
	}
	g.IdentityAssertion = nil
	if on {
		g.IdentityAssertion = ia
	}
	return nil
}
