package policy

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// Challenge is a protected resource's refusal: an RFC 6750 §3 Bearer
// challenge with the RFC 9728 resource_metadata pointer, an RFC 9449 §7.1
// DPoP challenge beside it where the school takes DPoP, and a small JSON
// body with the same error.
type Challenge struct {
	Status           int
	Error            string
	Description      string
	Scope            string
	ResourceMetadata string
	// RetryAfter, in seconds, is sent as Retry-After.
	RetryAfter int

	// Scheme is the scheme whose challenge carries the error and scope:
	// the one the request used, SchemeBearer ("" too) or SchemeDPoP.
	Scheme string
	// DPoP adds the DPoP challenge, with the algorithms proofs may use.
	DPoP bool
	// NoBearer leaves the Bearer challenge out: the school accepts no
	// bearer token (dpop required).
	NoBearer bool
	// Nonce, when set, is sent as DPoP-Nonce: the nonce to retry with.
	Nonce string
}

// The authentication schemes of a protected resource.
const (
	SchemeBearer = "Bearer"
	SchemeDPoP   = "DPoP"
)

// RetryAfterUnavailable is the Retry-After, in seconds, of every answer
// to a request the store failed (unreachable, too slow, out of
// connections). Such failures are mostly a failover, a restart or a
// drained pool, over in seconds; the gateway cannot know when, so it is
// a constant: short enough that a person retrying a sign-in hardly
// waits, long enough that every client of a school retrying at once
// does not hold down a database that is coming back.
const RetryAfterUnavailable = 5

// Unavailable is the answer when the token could not be checked: 503,
// not 401, because a client that is told its token is invalid throws
// away a token that is fine.
func Unavailable() *Challenge {
	return &Challenge{Status: http.StatusServiceUnavailable, Error: "temporarily_unavailable",
		Description: "the token could not be checked; try again", RetryAfter: RetryAfterUnavailable}
}

// challenges reports whether the answer asks for other credentials. A 5xx
// (a store or a legacy server that failed) judged none, and a client
// reading a Bearer challenge may start a new authorization or drop its
// token, which the 5xx answer is there to prevent.
func (c *Challenge) challenges() bool { return c.Status < http.StatusInternalServerError }

// Header renders the first WWW-Authenticate value: the Bearer challenge,
// or the DPoP one where bearer tokens are not accepted.
func (c *Challenge) Header() string { return c.Headers()[0] }

// Headers renders the WWW-Authenticate values, one per scheme, the Bearer
// challenge first: a client that reads one header value, or only the
// first challenge of it, as many do, finds the Bearer challenge and its
// resource_metadata as before DPoP.
func (c *Challenge) Headers() []string {
	dpop := c.Scheme == SchemeDPoP
	var out []string
	if !c.NoBearer {
		out = append(out, c.render(SchemeBearer, !dpop))
	}
	if c.DPoP || c.NoBearer || dpop {
		out = append(out, c.render(SchemeDPoP, dpop || c.NoBearer))
	}
	return out
}

// render writes one scheme's challenge, with the error when it is the
// scheme at fault.
func (c *Challenge) render(scheme string, withError bool) string {
	var b strings.Builder
	b.WriteString(scheme)
	sep := " "
	add := func(k, v string) {
		if v == "" {
			return
		}
		b.WriteString(sep)
		b.WriteString(k)
		b.WriteString(`="`)
		b.WriteString(ErrorText(v))
		b.WriteString(`"`)
		sep = ", "
	}
	if withError {
		add("error", c.Error)
		add("error_description", c.Description)
		add("scope", c.Scope)
	}
	if scheme == SchemeDPoP {
		add("algs", dpopAlgsText)
	}
	add("resource_metadata", c.ResourceMetadata)
	return b.String()
}

// ErrorText makes s fit where OAuth puts human-readable error text: an
// error_description (RFC 6749 §5.2) or a challenge's quoted string (RFC
// 6750 §3) allows printable ASCII except '"' and '\'. Anything else,
// often a part of the request named back, becomes an apostrophe.
func ErrorText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '\''
		}
		return r
	}, s)
}

// Write sends the challenge. CORS exposes WWW-Authenticate so browser
// clients can find the metadata.
func (c *Challenge) Write(w http.ResponseWriter) {
	h := w.Header()
	if c.challenges() {
		h.Del("WWW-Authenticate")
		for _, v := range c.Headers() {
			h.Add("WWW-Authenticate", v)
		}
	}
	if c.Nonce != "" {
		h.Set("DPoP-Nonce", c.Nonce)
	}
	if c.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(c.RetryAfter))
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	AllowCORS(h, "")
	body := map[string]string{"error": c.Error, "error_description": ErrorText(c.Description)}
	if c.Scope != "" {
		body["scope"] = c.Scope
	}
	w.WriteHeader(c.Status)
	_ = json.NewEncoder(w).Encode(body)
}

var errBadChallenge = errors.New("not a Bearer challenge")

// ParseChallenge reads a Bearer WWW-Authenticate value into its
// parameters. It is what a strict client does with our header, and the
// tests use it to check that header.
func ParseChallenge(v string) (map[string]string, error) {
	return ParseSchemeChallenge(SchemeBearer, v)
}

// ParseSchemeChallenge reads a WWW-Authenticate value of one challenge of
// scheme into its parameters.
func ParseSchemeChallenge(want, v string) (map[string]string, error) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(v), " ")
	if !strings.EqualFold(scheme, want) {
		return nil, errBadChallenge
	}
	out := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; {
		k, after, ok := strings.Cut(rest, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\",") {
			return nil, errBadChallenge
		}
		after = strings.TrimLeft(after, " \t")
		var val string
		if strings.HasPrefix(after, `"`) {
			end := strings.IndexByte(after[1:], '"')
			if end < 0 {
				return nil, errBadChallenge
			}
			val, after = after[1:1+end], after[2+end:]
		} else {
			val, after, _ = strings.Cut(after, ",")
			after = "," + after
			val = strings.TrimSpace(val)
		}
		if _, dup := out[k]; dup {
			return nil, errBadChallenge
		}
		out[k] = val
		after = strings.TrimLeft(after, " \t")
		if after != "" && !strings.HasPrefix(after, ",") {
			return nil, errBadChallenge
		}
		rest = strings.TrimSpace(strings.TrimPrefix(after, ","))
	}
	return out, nil
}

// AllowCORS opens a response to browser clients of any origin: the
// gateway's APIs authenticate with bearer and DPoP tokens, never cookies,
// so no origin gains anything it could not do without a browser. methods,
// when set, answers a preflight. Retry-After and DPoP-Nonce are exposed
// as well: neither is a safelisted header, and without them a browser
// client could not pace its retries after a 429 or 503, nor retry with
// the nonce a school asks for; a preflight allows the DPoP header.
//
// It is on every answer, so the headers are set directly, in canonical
// form, their values in one allocation: each header a slice of capacity
// one, so that a later Add to one copies rather than writes into the next.
func AllowCORS(h http.Header, methods string) {
	if methods == "" {
		v := []string{"*", corsExposed}
		h["Access-Control-Allow-Origin"], h["Access-Control-Expose-Headers"] = v[0:1:1], v[1:2:2]
		return
	}
	v := []string{"*", corsExposed, methods, corsAllowed, "600"}
	h["Access-Control-Allow-Origin"], h["Access-Control-Expose-Headers"] = v[0:1:1], v[1:2:2]
	h["Access-Control-Allow-Methods"], h["Access-Control-Allow-Headers"] = v[2:3:3], v[3:4:4]
	h["Access-Control-Max-Age"] = v[4:5:5]
}

const (
	corsExposed = "WWW-Authenticate, Retry-After, DPoP-Nonce"
	corsAllowed = "Authorization, Content-Type, Mcp-Protocol-Version, DPoP"
)
