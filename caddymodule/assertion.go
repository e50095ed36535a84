package caddymodule

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/schoolgate/schoolgate/policy"
)

// IdentityAssertion turns on the signed identity assertion: every request
// forwarded to a protected resource, and every Account API call of the
// MCP member tools, also carries X-School-Assertion, an ES256 JWT of the
// identity headers signed with the site's keys. A legacy server that
// verifies it no longer has to trust whoever can reach it.
type IdentityAssertion struct {
	// Audience is the assertion's aud, the name the legacy server checks
	// for itself. Default: the upstream's origin (scheme://host[:port]).
	Audience string `json:"audience,omitempty"`
}

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
	ia := &IdentityAssertion{}
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

// defaultAssertionAudience fills in the upstream's origin. A bad upstream
// is left for Validate to name.
func (g *Gateway) defaultAssertionAudience() {
	if g.IdentityAssertion == nil || g.IdentityAssertion.Audience != "" {
		return
	}
	if origin, err := policy.ParseOrigin(g.Upstream); err == nil {
		g.IdentityAssertion.Audience = origin
	}
}

// The values of identity_headers.
const (
	identityHeadersAll       = "all"
	identityHeadersAssertion = "assertion"
)

func (g *Gateway) validateIdentityAssertion() error {
	switch g.IdentityHeaders {
	case "", identityHeadersAll:
	case identityHeadersAssertion:
		if g.IdentityAssertion == nil {
			return errors.New("identity_headers assertion: requires identity_assertion on, or the legacy server would receive no identity")
		}
	default:
		return fmt.Errorf("identity_headers: %q must be all or assertion", g.IdentityHeaders)
	}
	if g.IdentityAssertion == nil {
		return nil
	}
	aud := g.IdentityAssertion.Audience
	if strings.TrimSpace(aud) != aud || aud == "" || strings.ContainsFunc(aud, unicode.IsControl) {
		return fmt.Errorf("identity_assertion audience: %q must be a non-empty string without surrounding space or control characters", aud)
	}
	return nil
}

// assertionAudience is the audience the site signs for, "" when off.
func (g *Gateway) assertionAudience() string {
	if g.IdentityAssertion == nil {
		return ""
	}
	return g.IdentityAssertion.Audience
}
