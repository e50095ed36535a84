package caddymodule

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/schoolgate/schoolgate/policy"
)

// unmarshalDPoP reads
//
//	dpop off|allowed|required [nonce]
//
// what the school makes of DPoP (RFC 9449), and whether its proofs carry
// the school's nonces.
func (g *Gateway) unmarshalDPoP(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	switch {
	case len(args) == 2 && args[1] == "nonce":
		g.DPoPNonce = true
	case len(args) != 1:
		return d.Err("dpop: expects off, allowed or required, and optionally nonce")
	}
	mode, err := policy.ParseDPoPMode(args[0])
	if err != nil || args[0] == "" {
		return d.Errf("dpop: %q is not off, allowed or required", args[0])
	}
	g.DPoP = mode
	return nil
}
