// Package caddymodule is the Caddy adapter of schoolgate: the
// school_gateway HTTP handler and Caddyfile directive with their
// configuration, the app that builds and keeps the schools (package
// school) with their stores, the reverse proxy to the legacy server,
// metrics, and the admin and CLI glue. A request is routed by the school;
// the protocol logic lives in authserver, policy, catalog and mcpserver.
package caddymodule

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/i18n"
	"github.com/schoolgate/schoolgate/policy"
)

func init() {
	caddy.RegisterModule(Gateway{})
}

// Gateway is the school_gateway handler: one school site's authorization
// server, protected-resource checks, MCP server and documents, in front of
// the legacy school server (the upstream).
type Gateway struct {
	// Upstream is the legacy school server's base URL: http:// or https://
	// and a host, nothing else. Required. It is the first upstream of the
	// reverse proxy and the one the gateway itself calls (session lookup,
	// catalog, the MCP tools' Account API calls).
	Upstream string `json:"upstream"`
	// Issuer is the site origin: the OAuth issuer, the resource indicator
	// and the base of every published URL; never read from a request.
	// Provisioning keeps it in its one spelling (policy.ParseOrigin):
	// HTTPS://School.Example:443/ is https://school.example everywhere.
	// Default (Caddyfile only): the site address; required in JSON.
	Issuer string `json:"issuer,omitempty"`
	// Data is the directory of the site's bbolt file (keys, clients,
	// tokens, catalog). Default: <Caddy's data directory>/schoolgate/<host_port>
	// of the issuer (datadir.go).
	Data string `json:"data,omitempty"`
	// Store keeps the site in a database instead of the bbolt file, so
	// that several Caddy instances serve it as one; not together with
	// Data. Default: none (bbolt).
	Store *StoreConfig `json:"store,omitempty"`
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
	// with the security the gateway enforces. Default: none (generic
	// per-area operations are published).
	AdminOpenAPI string `json:"admin_openapi,omitempty"`
	// Catalog is a file path or http(s) URL of the catalog feed, imported
	// into the store. Default: none (the catalog tools answer empty).
	Catalog string `json:"catalog,omitempty"`
	// Language is the language of the pages people read (consent,
	// connected applications, error page) for a browser that asks for
	// none the pages are written in: en, de, fr, it, es or pt. Default:
	// the catalog feed's language when it is one of them, else en.
	Language string `json:"language,omitempty"`
	// CatalogRefresh is how often Catalog (and an AdminOpenAPI URL) is
	// fetched again. Default: 10m; at least 1s.
	CatalogRefresh caddy.Duration `json:"catalog_refresh,omitempty"`
	// Vendors are known integrations: pre-registered clients whose
	// registration by name returns their client_id. Default: none.
	Vendors []Vendor `json:"vendors,omitempty"`
	// MCPConnections is the initial value of the beta feature switch
	// (operators can change it in the admin area). Default: false.
	MCPConnections bool `json:"mcp_connections,omitempty"`
	// MetadataDocuments turns on Client ID Metadata Documents. Default:
	// nil, i.e. https client_ids are not fetched.
	MetadataDocuments *MetadataDocuments `json:"metadata_documents,omitempty"`
	// Rules override the default admin-API policy, first match wins, and
	// are checked before it. Default: none.
	Rules []Rule `json:"rules,omitempty"`
	// RateLimits are the abuse limits of the OAuth endpoints. Default:
	// nil, i.e. the defaults listed in docs/operator.md.
	RateLimits *RateLimits `json:"rate_limits,omitempty"`
	// IdentityAssertion, when present, signs the caller's identity for the
	// legacy server (X-School-Assertion). Default: nil, off.
	IdentityAssertion *IdentityAssertion `json:"identity_assertion,omitempty"`
	// IdentityHeaders is what a protected request carries to the legacy
	// server: "all", the X-School-* identity headers (and the assertion
	// when on), or "assertion", the signed assertion alone, for a legacy
	// server that verifies it; requires identity_assertion on. Default:
	// all.
	IdentityHeaders string `json:"identity_headers,omitempty"`
	// DPoP is what the school makes of DPoP (RFC 9449): "off", proofs
	// ignored and bearer tokens only; "allowed", tokens bound to the key
	// of a client that sends proofs, bearer tokens for one that does not;
	// "required", DPoP-bound tokens only. Default: allowed.
	DPoP string `json:"dpop,omitempty"`
	// DPoPNonce makes every DPoP proof carry a nonce of the school's (RFC
	// 9449 §8, §9). Default: false.
	DPoPNonce bool `json:"dpop_nonce,omitempty"`
	// CodeTTL is how long an authorization code lives. Default: 60s.
	CodeTTL caddy.Duration `json:"code_ttl,omitempty"`
	// AccessTTL is how long an access token lives. Default: 1h.
	AccessTTL caddy.Duration `json:"access_token_ttl,omitempty"`
	// RefreshTTL is how long a refresh token lives. Default: 720h.
	RefreshTTL caddy.Duration `json:"refresh_token_ttl,omitempty"`
	// AuditRetention is how long the school's audit events are kept
	// (docs/privacy.md). Default: 4320h (180 days); at least 24h.
	AuditRetention caddy.Duration `json:"audit_retention,omitempty"`
	// DoctorRetention is how long the connection doctor keeps an
	// application's steps after its last attempt (docs/privacy.md).
	// Default: 168h (7 days); 1h to 2160h.
	DoctorRetention caddy.Duration `json:"doctor_retention,omitempty"`
	// RefreshGrace is how long a rotated refresh token may still be
	// presented (a client retrying a lost answer) before reuse revokes
	// the grant. Default: 10s.
	RefreshGrace caddy.Duration `json:"refresh_grace,omitempty"`
	// NoRefreshGrace makes any second use of a refresh token a replay
	// that revokes its grant, with no window for a retry (Caddyfile:
	// refresh_grace 0). Default: false.
	NoRefreshGrace bool `json:"no_refresh_grace,omitempty"`
	// Weight is the school's share of the instance while it is
	// contended, against the other schools' weights (fair share).
	// Default: 1.
	Weight int `json:"weight,omitempty"`
	// Budget is the school's own limits (budget.go). Default: none but
	// the legacy server's default concurrency.
	Budget *Budget `json:"budget,omitempty"`

	// key names the school's state in the site pool (sitepool.go).
	key string

	// upstreamBlock is the Caddyfile's upstream block, handed to
	// reverse_proxy's unmarshaler when the directive expands; in JSON
	// the reverse_proxy handler is configured directly.
	upstreamBlock caddyfile.Segment

	// adminOpenAPI is the admin OpenAPI file's content, read by
	// Provision.
	adminOpenAPI []byte
	// ctx is the config's context, with which the App's Start builds the
	// school (start.go).
	ctx caddy.Context
	// run is what serves, once the App's Start has built it.
	run *gatewayRun
}

// Vendor is a known integration (a pre-registered client).
type Vendor struct {
	// Name is what the integration sends as client_name when it registers;
	// it matches without regard to case and surrounding white space.
	// Required.
	Name string `json:"name"`
	// ClientID is the client_id registration returns. Required.
	ClientID string `json:"client_id"`
	// RedirectURIs are the integration's callbacks, matched exactly.
	// At least one.
	RedirectURIs []string `json:"redirect_uris"`
	// Audience is member or operator. Default: member.
	Audience string `json:"audience,omitempty"`
	// Scopes limits what the client may request. Default: for a member
	// client openid, profile, email, account:read and account:write; for
	// an operator client every operator scope.
	Scopes []string `json:"scopes,omitempty"`
	// ClientSecret makes the client confidential (client_secret_post);
	// only its hash is kept in memory. Default: none, a public client.
	ClientSecret string `json:"client_secret,omitempty"`
}

// MetadataDocuments configures fetching Client ID Metadata Documents.
type MetadataDocuments struct {
	// AllowHosts lists the hosts documents may come from; "*" is any
	// public host. Default: none, i.e. no document is fetched.
	AllowHosts []string `json:"allow_hosts,omitempty"`
	// AllowPrivateNetworks permits loopback and private addresses, for
	// tests only. Default: false.
	AllowPrivateNetworks bool `json:"allow_private_networks,omitempty"`
}

// Rule is an operator override of the admin-API policy.
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

// CaddyModule returns the Caddy module information.
func (Gateway) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.school_gateway",
		New: func() caddy.Module { return new(Gateway) },
	}
}

var (
	_ caddy.Provisioner           = (*Gateway)(nil)
	_ caddy.Validator             = (*Gateway)(nil)
	_ caddy.CleanerUpper          = (*Gateway)(nil)
	_ caddyhttp.MiddlewareHandler = (*Gateway)(nil)
)

func (g *Gateway) setDefaults() {
	if g.SessionURL == "" {
		g.SessionURL = "/api/session"
	}
	if g.LoginURL == "" {
		g.LoginURL = "/login"
	}
	if g.AdminPrefix == "" {
		g.AdminPrefix = "/admin/api"
	}
	g.canonicalIssuer()
	g.Upstream = strings.TrimSuffix(g.Upstream, "/")
	g.defaultAssertionAudience()
}

// canonicalIssuer puts the issuer in its one spelling, once, before
// anything reads it: the data directory, the database row, the metrics
// label, the App's registry, published URLs and the school's name would
// otherwise each follow the spelling they were given, and one school could
// start twice. A bad issuer is left for Validate to name.
func (g *Gateway) canonicalIssuer() {
	if origin, err := policy.ParseOrigin(g.Issuer); err == nil {
		g.Issuer = origin
	}
}

// Validate checks the configuration before anything is served; every
// message names the option at fault.
func (g *Gateway) Validate() error {
	if err := checkBaseURL("upstream", g.Upstream, true); err != nil {
		return err
	}
	if err := g.validateRateLimits(); err != nil {
		return err
	}
	if err := g.validateBudget(); err != nil {
		return err
	}
	if err := checkBaseURL("issuer", g.Issuer, false); err != nil {
		return err
	}
	for _, opt := range []struct{ name, v string }{{"session_url", g.SessionURL}, {"login_url", g.LoginURL}} {
		if err := checkPathOrURL(opt.name, opt.v); err != nil {
			return err
		}
	}
	if g.Language != "" && !i18n.IsLanguage(g.Language) {
		return fmt.Errorf("language: %q is not one of the pages' languages (%s)", g.Language, strings.Join(i18n.Languages, ", "))
	}
	if !strings.HasPrefix(g.AdminPrefix, "/") || strings.Contains(g.AdminPrefix, "..") {
		return fmt.Errorf("admin_prefix: %q must be an absolute path", g.AdminPrefix)
	}
	if err := g.validateVendors(); err != nil {
		return err
	}
	if err := authserver.CheckAuditRetention(time.Duration(g.AuditRetention)); err != nil {
		return fmt.Errorf("audit_retention: %v", err)
	}
	if err := authserver.CheckStepRetention(time.Duration(g.DoctorRetention)); err != nil {
		return fmt.Errorf("doctor_retention: %v", err)
	}
	if err := g.validateIdentityAssertion(); err != nil {
		return err
	}
	if err := g.validateDPoP(); err != nil {
		return err
	}
	if err := g.validateStore(); err != nil {
		return err
	}
	for _, r := range g.Rules {
		if err := r.validate(); err != nil {
			return err
		}
		if !policy.Covers(g.AdminPrefix, r.Path) {
			return fmt.Errorf("rule %s %s: the path is not under admin_prefix %s, so the rule could never apply", r.Method, r.Path, g.AdminPrefix)
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

var clientIDPattern = regexp.MustCompile(`^[A-Za-z0-9._~-]{1,128}$`)

func (g *Gateway) validateVendors() error {
	seen := map[string]bool{}
	for _, v := range g.Vendors {
		where := fmt.Sprintf("vendor %q", v.Name)
		switch {
		case strings.TrimSpace(v.Name) == "":
			return fmt.Errorf("vendor: a name is required")
		case !clientIDPattern.MatchString(v.ClientID):
			return fmt.Errorf("%s: client_id %q must be 1-128 characters of A-Z a-z 0-9 . _ ~ -", where, v.ClientID)
		case seen[v.ClientID]:
			return fmt.Errorf("%s: client_id %q is used by another vendor", where, v.ClientID)
		case len(v.RedirectURIs) == 0:
			return fmt.Errorf("%s: at least one redirect_uri is required", where)
		case v.Audience != "" && v.Audience != policy.AudienceMember && v.Audience != policy.AudienceOperator:
			return fmt.Errorf("%s: audience must be member or operator, not %q", where, v.Audience)
		}
		seen[v.ClientID] = true
		for _, ru := range v.RedirectURIs {
			u, err := url.Parse(ru)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
				return fmt.Errorf("%s: redirect_uri %q must be an absolute http(s) URL without fragment", where, ru)
			}
		}
		if err := checkScopes(where, v.Scopes); err != nil {
			return err
		}
	}
	return nil
}
