package caddymodule

import (
	"fmt"

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
	if _, err := policy.ParseDPoPMode(args[0]); err != nil || args[0] == "" {
		return d.Errf("dpop: %q is not off, allowed or required", args[0])
	}
	g.DPoP = args[0]
	return nil
}

// validateDPoP checks the dpop option as JSON (and a registry record)
// gives it.
func (g *Gateway) validateDPoP() error {
	mode, err := policy.ParseDPoPMode(g.DPoP)
	if err != nil {
		return fmt.Errorf("dpop: %v", err)
	}
	if g.DPoPNonce && mode == policy.DPoPOff {
		return fmt.Errorf("dpop_nonce: needs dpop allowed or required; with dpop off no proof is read")
	}
	return nil
}

// dpopMode is the school's DPoP mode; Validate has checked it.
func (g *Gateway) dpopMode() policy.DPoPMode {
	mode, _ := policy.ParseDPoPMode(g.DPoP)
	return mode
}
