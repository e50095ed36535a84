package policy

import (
	"fmt"
	"net/http"
	"time"
)

// DPoPMode is what a school makes of DPoP (RFC 9449): its option dpop.
type DPoPMode uint8

const (
	// DPoPAllowed, the default: a client that sends proofs gets tokens
	// bound to its key, one that sends none gets bearer tokens.
	DPoPAllowed DPoPMode = iota
	// DPoPOff: proofs are ignored and every token is a bearer token, as
	// before DPoP.
	DPoPOff
	// DPoPRequired: the token endpoint issues DPoP-bound tokens only, and
	// the protected resources accept no bearer token.
	DPoPRequired
)

// DPoPModes are the option's values, in the order docs name them.
var DPoPModes = []string{"off", "allowed", "required"}

// ParseDPoPMode reads the option's value; "" is the default.
func ParseDPoPMode(s string) (DPoPMode, error) {
	switch s {
	case "", "allowed":
		return DPoPAllowed, nil
	case "off":
		return DPoPOff, nil
	case "required":
		return DPoPRequired, nil
	}
	return 0, fmt.Errorf("%q is not off, allowed or required", s)
}

// MarshalText writes the mode as the option does.
func (m DPoPMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads the option dpop as a configuration's JSON gives it,
// naming the option when the value is none of its words.
func (m *DPoPMode) UnmarshalText(b []byte) error {
	v, err := ParseDPoPMode(string(b))
	if err != nil {
		return fmt.Errorf("dpop: %v", err)
	}
	*m = v
	return nil
}

func (m DPoPMode) String() string {
	switch m {
	case DPoPOff:
		return "off"
	case DPoPRequired:
		return "required"
	}
	return "allowed"
}

// DPoP is one school's DPoP at its token endpoint and its protected
// resources: the mode, the nonces when it asks for them, and the proofs
// it has seen.
type DPoP struct {
	mode   DPoPMode
	nonces *Nonces
	replay *replayCache
	now    func() time.Time
}

// NewDPoP makes a school's DPoP. nonces, when not nil, makes every proof
// carry one of the school's nonces.
func NewDPoP(mode DPoPMode, nonces *Nonces, now func() time.Time) *DPoP {
	if now == nil {
		now = time.Now
	}
	return &DPoP{mode: mode, nonces: nonces, replay: newReplayCache(), now: now}
}

// Mode is the school's mode; a nil DPoP is off.
func (d *DPoP) Mode() DPoPMode {
	if d == nil {
		return DPoPOff
	}
	return d.mode
}

// On reports whether the school takes DPoP at all.
func (d *DPoP) On() bool { return d.Mode() != DPoPOff }

// Nonces are the school's nonces, nil when it asks for none.
func (d *DPoP) Nonces() *Nonces {
	if d == nil {
		return nil
	}
	return d.nonces
}

// Remembered is how many proofs the replay cache holds.
func (d *DPoP) Remembered() int { return d.replay.size() }

// ErrUnavailable is the code of a proof that could not be judged: the
// replay cache is full (dpopreplay.go). It is answered 503, not as a bad
// proof: a good one may be refused only for now.
const ErrUnavailable = "temporarily_unavailable"

// Proof reads and checks the request's DPoP proof for target (RFC 9449
// §4.3), the school's nonce (§8, §9) and its jti (§11.1); nil and no
// error when the request has no DPoP header. A refusal changes nothing
// but, for a proof good in every other way, leaves its jti spent.
func (d *DPoP) Proof(r *http.Request, target ProofTarget) (*Proof, *ProofError) {
	values := r.Header.Values("DPoP")
	switch len(values) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, badProof("send exactly one DPoP header")
	}
	now := d.now()
	p, perr := ParseProof(values[0], target, now)
	if perr != nil {
		return nil, perr
	}
	if n := d.nonces; n != nil {
		switch valid, _ := n.Check(p.Nonce, now); {
		case p.Nonce == "":
			return nil, &ProofError{Code: ErrUseDPoPNonce, Reason: "this school asks for a server nonce in DPoP proofs: retry with the one in the DPoP-Nonce header"}
		case !valid:
			return nil, &ProofError{Code: ErrUseDPoPNonce, Reason: "the DPoP proof's nonce is stale or not this school's: retry with the one in the DPoP-Nonce header"}
		}
	}
	switch d.replay.check(p, now) {
	case replaySeen:
		return nil, badProof("the DPoP proof was used before (its jti): make a new proof for each request")
	case replayFull:
		return nil, &ProofError{Code: ErrUnavailable, Reason: "too many DPoP proofs to remember right now; try again"}
	}
	return p, nil
}

// NonceFor is the nonce to hand a client whose proof carried p's: the
// current one, or "" when it holds it already or the school asks for
// none.
func (d *DPoP) NonceFor(p *Proof) string {
	n := d.Nonces()
	if n == nil {
		return ""
	}
	now := d.now()
	if p != nil {
		if _, current := n.Check(p.Nonce, now); current {
			return ""
		}
	}
	return n.Current(now)
}

// CurrentNonce is the nonce to retry with after use_dpop_nonce, "" when
// the school asks for none.
func (d *DPoP) CurrentNonce() string {
	if n := d.Nonces(); n != nil {
		return n.Current(d.now())
	}
	return ""
}
