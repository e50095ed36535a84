package school

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/i18n"
	"github.com/schoolgate/schoolgate/option"
	"github.com/schoolgate/schoolgate/policy"
)

// Options are a school's options, declared once: a site block's JSON
// (caddymodule's Gateway embeds them beside what is Caddy's: where the
// state is kept and the upstream block), a registry record's
// configuration and a test's school are read into them, defaulted by
// SetDefaults and checked by Check, whose every message names the option
// as the configuration spells it. The authorization server's own options
// are embedded, declared in authserver. A field whose Caddyfile spelling
// is not its JSON name says it in its caddyfile tag: the words of the
// line that sets it. Adding an option is its field here (with its default
// and its check), its Caddyfile line, and its row in docs/operator.md.
type Options struct {
	// Upstream is the legacy school server's base URL: http:// or
	// https:// and a host, nothing else. Required. It is the first
	// upstream of the reverse proxy and the one the school itself calls
	// (session lookup, catalog, the MCP tools' Account API calls).
	Upstream string `json:"upstream" caddyfile:"school_gateway"`
	// Issuer is the site origin: the OAuth issuer, the resource indicator
	// and the base of every published URL; never read from a request.
	// SetDefaults keeps it in its one spelling (policy.ParseOrigin):
	// HTTPS://School.Example:443/ is https://school.example everywhere.
	// Default: a site block's address (a Caddyfile), a record's issuer.
	Issuer string `json:"issuer,omitempty"`
	// SessionURL is the upstream's session endpoint, a path on the
	// upstream or an http(s) URL. Default: /api/session.
	SessionURL string `json:"session_url,omitempty"`
	// LoginURL is the legacy login page people are sent to, a path on the
	// site or an http(s) URL. Default: /login.
	LoginURL string `json:"login_url,omitempty"`
	// AdminPrefix is the path prefix of the school's admin API, protected
	// with operator tokens. Default: /admin/api.
	AdminPrefix string `json:"admin_prefix,omitempty"`
	// AdminOpenAPI is a file path or http(s) URL of the school's own
	// OpenAPI 3.0 description of its admin API, merged into /openapi.json
	// with the security the gateway enforces: a file is read with the
	// configuration (ReadAdminOpenAPI), a URL fetched every
	// CatalogRefresh. Default: none (generic per-area operations are
	// published).
	AdminOpenAPI string `json:"admin_openapi,omitempty"`
	// Catalog is a file path or http(s) URL of the catalog feed, imported
	// into the store every CatalogRefresh. Default: none (the catalog
	// tools answer empty).
	Catalog string `json:"catalog,omitempty"`
	// CatalogRefresh is how often Catalog (and an AdminOpenAPI URL) is
	// read again. Default: 10m; a Caddyfile's at least 1s.
	CatalogRefresh option.Duration `json:"catalog_refresh,omitempty" caddyfile:"catalog refresh"`
	// Language is the language of the pages people read (consent,
	// connected applications, error page) for a browser that asks for
	// none the pages are written in: one of i18n.Languages. Default: the
	// catalog feed's language when it is one of them, else en.
	Language string `json:"language,omitempty"`

	// The authorization server's options: vendors, mcp_connections,
	// metadata_documents, rate_limits, dpop, dpop_nonce and the
	// lifetimes.
	authserver.Options

	// Rules override the default admin-API policy, first match wins, and
	// are checked before it. Default: none.
	Rules []Rule `json:"rules,omitempty" caddyfile:"rule"`
	// IdentityAssertion, when present, signs the caller's identity for
	// the legacy server (X-School-Assertion). Default: nil, off.
	IdentityAssertion *IdentityAssertion `json:"identity_assertion,omitempty"`
	// IdentityHeaders is what a protected request carries to the legacy
	// server: IdentityHeadersAll, the X-School-* identity headers (and
	// the assertion when on), or IdentityHeadersAssertion, the signed
	// assertion alone, for a legacy server that verifies it; requires
	// identity_assertion on. Default: all.
	IdentityHeaders string `json:"identity_headers,omitempty"`
	// Weight is the school's share of the instance while it is
	// contended, against the other schools' weights (fair share).
	// Default: 1.
	Weight int `json:"weight,omitempty"`
	// Budget is the school's own limits. Default: none but the legacy
	// server's default concurrency and timeout.
	Budget *Budget `json:"budget,omitempty"`
}

// Rule is an operator override of the admin-API policy (option rule).
type Rule struct {
	// Method is an HTTP method, or "" or "*" for any. Default: any.
	Method string `json:"method,omitempty"`
	// Path is under AdminPrefix, matched exactly, or as a prefix when it
	// ends in "/*". Required.
	Path string `json:"path"`
	// Audience is member, operator, or deny (refuse whatever the token).
	// Required.
	Audience string `json:"audience"`
	// Scopes are all needed. Default: none beyond the audience.
	Scopes []string `json:"scopes,omitempty"`
}

// RuleDeny is the audience of a rule that refuses whatever the token.
const RuleDeny = "deny"

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

// The values of identity_headers.
const (
	IdentityHeadersAll       = "all"
	IdentityHeadersAssertion = "assertion"
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
	// Requests is the rate of all the school's requests but its public
	// documents (authserver.IsPublicDocument: the metadata documents,
	// the JWKS and what the pages load). Default: none.
	Requests *option.Rate `json:"requests,omitempty"`
	// MCPAnonymous is the rate of the school's anonymous /mcp calls, all
	// callers together. Default: none.
	MCPAnonymous *option.Rate `json:"mcp_anonymous,omitempty"`
	// LegacyConcurrency is how many requests may wait on the legacy
	// server at once. Default: DefaultLegacyConcurrency.
	LegacyConcurrency int `json:"legacy_concurrency,omitempty"`
	// LegacyTimeout is how long a request waits for the legacy server's
	// response header: the response-header timeout of the proxy's
	// transport, which the proxy's builder (caddymodule) sets where the
	// configuration sets none itself. Default: DefaultLegacyTimeout.
	LegacyTimeout option.Duration `json:"legacy_timeout,omitempty"`
}

// SetDefaults fills in the defaults that the school's identity and
// published documents depend on, and puts the issuer and the upstream in
// their one spelling, before anything reads them; the defaults of the
// lifetimes, limits and refresh are the building's (New). A bad issuer
// or upstream is left for Check to name.
func (o *Options) SetDefaults() {
	if o.SessionURL == "" {
		o.SessionURL = "/api/session"
	}
	if o.LoginURL == "" {
		o.LoginURL = "/login"
	}
	if o.AdminPrefix == "" {
		o.AdminPrefix = "/admin/api"
	}
	// The issuer's one spelling, once: the data directory, the database
	// row, the metrics label, published URLs and the school's name would
	// otherwise each follow the spelling they were given, and one school
	// could start twice.
	if origin, err := policy.ParseOrigin(o.Issuer); err == nil {
		o.Issuer = origin
	}
	o.Upstream = strings.TrimSuffix(o.Upstream, "/")
	if o.IdentityAssertion != nil && o.IdentityAssertion.Audience == "" {
		if origin, err := policy.ParseOrigin(o.Upstream); err == nil {
			o.IdentityAssertion.Audience = origin
		}
	}
}

// Check refuses options a school cannot be built from, naming the option
// at fault; the issuer may be missing (a Caddyfile and a record give it).
// A site block, a registry record (when it is written, and when it is
// read) and New check with it.
func (o *Options) Check() error {
	if err := checkBaseURL("upstream", o.Upstream, true); err != nil {
		return err
	}
	if err := o.checkBudget(); err != nil {
		return err
	}
	if err := checkBaseURL("issuer", o.Issuer, false); err != nil {
		return err
	}
	for _, opt := range []struct{ name, v string }{{"session_url", o.SessionURL}, {"login_url", o.LoginURL}} {
		if err := checkPathOrURL(opt.name, opt.v); err != nil {
			return err
		}
	}
	if o.Language != "" && !i18n.IsLanguage(o.Language) {
		return fmt.Errorf("language: %q is not one of the pages' languages (%s)", o.Language, strings.Join(i18n.Languages, ", "))
	}
	if !strings.HasPrefix(o.AdminPrefix, "/") || strings.Contains(o.AdminPrefix, "..") {
		return fmt.Errorf("admin_prefix: %q must be an absolute path", o.AdminPrefix)
	}
	if err := o.Options.Check(); err != nil {
		return err
	}
	if err := o.checkIdentity(); err != nil {
		return err
	}
	for _, r := range o.Rules {
		if err := r.check(); err != nil {
			return err
		}
		if !policy.Covers(o.AdminPrefix, r.Path) {
			return fmt.Errorf("rule %s %s: the path is not under admin_prefix %s, so the rule could never apply", r.Method, r.Path, o.AdminPrefix)
		}
	}
	return nil
}

func checkBaseURL(option, raw string, required bool) error {
	if raw == "" {
		if required {
			return fmt.Errorf("%s: is required", option)
		}
		return nil
	}
	if _, err := policy.ParseOrigin(raw); err != nil {
		return fmt.Errorf("%s: %v", option, err)
	}
	return nil
}

func checkPathOrURL(option, raw string) error {
	if strings.HasPrefix(raw, "/") && !strings.HasPrefix(raw, "//") {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: %q must be a path starting with / or an http(s) URL", option, raw)
	}
	return nil
}

// checkBudget checks the weight and the budget.
func (o *Options) checkBudget() error {
	if o.Weight < 0 {
		return fmt.Errorf("weight: %d is not a positive number", o.Weight)
	}
	b := o.Budget
	if b == nil {
		return nil
	}
	for _, r := range []struct {
		name string
		rate *option.Rate
	}{{"budget requests", b.Requests}, {"budget mcp_anonymous", b.MCPAnonymous}} {
		if r.rate != nil {
			if err := r.rate.Check(r.name); err != nil {
				return err
			}
		}
	}
	if b.LegacyConcurrency < 0 {
		return fmt.Errorf("budget legacy_concurrency: %d is not a positive number", b.LegacyConcurrency)
	}
	if b.LegacyTimeout < 0 {
		return fmt.Errorf("budget legacy_timeout: %s is not a positive duration", b.LegacyTimeout)
	}
	return nil
}

func (o *Options) checkIdentity() error {
	switch o.IdentityHeaders {
	case "", IdentityHeadersAll:
	case IdentityHeadersAssertion:
		if o.IdentityAssertion == nil {
			return errors.New("identity_headers assertion: requires identity_assertion on, or the legacy server would receive no identity")
		}
	default:
		return fmt.Errorf("identity_headers: %q must be all or assertion", o.IdentityHeaders)
	}
	if o.IdentityAssertion == nil {
		return nil
	}
	aud := o.IdentityAssertion.Audience
	if strings.TrimSpace(aud) != aud || aud == "" || strings.ContainsFunc(aud, unicode.IsControl) {
		return fmt.Errorf("identity_assertion audience: %q must be a non-empty string without surrounding space or control characters", aud)
	}
	return nil
}

func (r Rule) check() error {
	where := fmt.Sprintf("rule %s %s", r.Method, r.Path)
	if !strings.HasPrefix(r.Path, "/") {
		return fmt.Errorf("%s: the path must start with /", where)
	}
	if r.Audience != policy.AudienceMember && r.Audience != policy.AudienceOperator && r.Audience != RuleDeny {
		return fmt.Errorf("%s: audience must be member, operator or deny, not %q", where, r.Audience)
	}
	return policy.CheckScopes(where, r.Scopes)
}

// Policy is the admin-API policy of the options' admin_prefix and rules.
func (o *Options) Policy() *policy.Policy {
	rules := make([]policy.Rule, 0, len(o.Rules))
	for _, r := range o.Rules {
		pr := policy.Rule{Method: r.Method, Path: r.Path, Deny: r.Audience == RuleDeny,
			Requirement: policy.Requirement{Audience: r.Audience, Scopes: r.Scopes}}
		if pr.Deny {
			pr.Requirement = policy.Requirement{}
		}
		rules = append(rules, pr)
	}
	return &policy.Policy{AdminPrefix: o.AdminPrefix, Rules: rules}
}

// assertionAudience is the audience the school signs its identity
// assertion for, "" when it signs none.
func (o *Options) assertionAudience() string {
	if o.IdentityAssertion == nil {
		return ""
	}
	return o.IdentityAssertion.Audience
}

// assertionOnly reports whether a protected request carries the
// assertion alone.
func (o *Options) assertionOnly() bool { return o.IdentityHeaders == IdentityHeadersAssertion }

// LegacyTimeout is how long a request waits for the legacy server's
// answer: the budget's legacy_timeout, or DefaultLegacyTimeout.
func (o *Options) LegacyTimeout() time.Duration {
	if o.Budget != nil && o.Budget.LegacyTimeout > 0 {
		return o.Budget.LegacyTimeout.D()
	}
	return DefaultLegacyTimeout
}
