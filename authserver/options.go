package authserver

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/option"
	"github.com/schoolgate/schoolgate/policy"
)

// Options are the authorization server's options as a school's
// configuration declares them: school.Config embeds them, so that their
// JSON names, defaults and checks are written here once, and a site
// block, a registry record and a test configure the server alike. A
// field whose Caddyfile spelling is not its JSON name says it in its
// caddyfile tag (the words of the line that sets it).
type Options struct {
	// Vendors are known integrations: pre-registered clients whose
	// registration by name returns their client_id. Default: none.
	Vendors []VendorClient `json:"vendors,omitempty" caddyfile:"vendor"`
	// MCPConnections is the initial value of the beta feature switch
	// (operators can change it in the admin area; the stored value
	// wins). Default: false.
	MCPConnections bool `json:"mcp_connections,omitempty"`
	// MetadataDocuments configures Client ID Metadata Documents.
	// Default: nil, documents from any public host.
	MetadataDocuments *MetadataDocumentsConfig `json:"metadata_documents,omitempty"`
	// RateLimits are the abuse limits of the OAuth endpoints and of the
	// anonymous /mcp calls per address. Default: nil, DefaultRateLimits.
	RateLimits *RateLimitOptions `json:"rate_limits,omitempty" caddyfile:"rate_limit"`
	// DPoP is what the school makes of DPoP (RFC 9449): off, allowed or
	// required. Default: allowed (the zero value).
	DPoP policy.DPoPMode `json:"dpop,omitempty"`
	// DPoPNonce makes every DPoP proof carry a nonce of the school's
	// (RFC 9449 §8, §9); not with dpop off. Default: false.
	DPoPNonce bool `json:"dpop_nonce,omitempty" caddyfile:"dpop nonce"`
	// CodeTTL is how long an authorization code lives. Default:
	// DefaultCodeTTL.
	CodeTTL option.Duration `json:"code_ttl,omitempty"`
	// AccessTTL is how long an access token lives. Default:
	// DefaultAccessTTL.
	AccessTTL option.Duration `json:"access_token_ttl,omitempty"`
	// RefreshTTL is how long a refresh token lives. Default:
	// DefaultRefreshTTL.
	RefreshTTL option.Duration `json:"refresh_token_ttl,omitempty"`
	// AuditRetention is how long audit events are kept before the
	// janitor purges them, MinAuditRetention to MaxAuditRetention.
	// Default: DefaultAuditRetention.
	AuditRetention option.Duration `json:"audit_retention,omitempty"`
	// DoctorRetention is how long the connection doctor keeps an
	// application's steps after its last attempt, MinStepRetention to
	// MaxStepRetention (doctor.go). Default: DefaultStepRetention.
	DoctorRetention option.Duration `json:"doctor_retention,omitempty"`
	// RefreshGrace is how long a rotated refresh token may still be
	// presented (a client retrying a lost answer) before reuse revokes
	// the grant. Default: DefaultRefreshGrace.
	RefreshGrace option.Duration `json:"refresh_grace,omitempty"`
	// NoRefreshGrace makes every second use of a refresh token a replay
	// that revokes its grant: a client that lost the answer must
	// authorize again. Default: false.
	NoRefreshGrace bool `json:"no_refresh_grace,omitempty" caddyfile:"refresh_grace 0"`
}

// VendorClient is a client configured by the operator (option vendor).
type VendorClient struct {
	// Name is what the integration sends as client_name when it
	// registers; it matches without regard to case and surrounding white
	// space. Required.
	Name string `json:"name"`
	// ClientID is the client_id registration returns. Required.
	ClientID string `json:"client_id"`
	// RedirectURIs are the integration's callbacks, matched exactly. At
	// least one.
	RedirectURIs []string `json:"redirect_uris" caddyfile:"redirect_uri"`
	// Audience is member or operator. Default: member.
	Audience string `json:"audience,omitempty"`
	// Scopes limits what the client may request. Default: for a member
	// client openid, profile, email, account:read and account:write; for
	// an operator client every operator scope.
	Scopes []string `json:"scopes,omitempty"`
	// Secret makes the client confidential (client_secret_post); only
	// its hash is kept in memory. Default: none, a public client.
	Secret string `json:"client_secret,omitempty"`
}

// RateLimitOptions are the abuse limits as the option rate_limit writes
// them: Off disables every limit; each named limit overrides its default.
type RateLimitOptions struct {
	// Off disables every limit. Default: false.
	Off bool `json:"off,omitempty"`
	// Limits by name (RateLimitNames). Default: DefaultRateLimits' value
	// of each.
	Limits map[string]option.Rate `json:"limits,omitempty"`
}

// rateLimitFields are the limits an operator can set, and where each
// goes.
var rateLimitFields = map[string]func(*RateLimits) *Limit{
	"register":     func(l *RateLimits) *Limit { return &l.Register },
	"new_clients":  func(l *RateLimits) *Limit { return &l.NewClients },
	"authorize":    func(l *RateLimits) *Limit { return &l.Authorize },
	"token":        func(l *RateLimits) *Limit { return &l.Token },
	"token_client": func(l *RateLimits) *Limit { return &l.TokenClient },
	"revoke":       func(l *RateLimits) *Limit { return &l.Revoke },
	// Anonymous /mcp calls, per address (the school applies it).
	"mcp_anonymous": func(l *RateLimits) *Limit { return &l.MCPAnonymous },
}

// RateLimitNames are the names rate_limit takes, in the order the
// documents list them.
var RateLimitNames = []string{"register", "new_clients", "authorize", "token", "token_client", "revoke", "mcp_anonymous"}

// IsRateLimit reports whether name is a limit rate_limit sets.
func IsRateLimit(name string) bool { _, ok := rateLimitFields[name]; return ok }

// LimitOf is a configured rate as the limiters take it; nil is none.
func LimitOf(r *option.Rate) Limit {
	if r == nil {
		return Limit{}
	}
	return Per(r.Events, r.Period.D(), r.BurstOrEvents())
}

// limits are the server's limits: DefaultRateLimits, none when Off, each
// named one in place of its default.
func (o *RateLimitOptions) limits() RateLimits {
	l := DefaultRateLimits
	switch {
	case o == nil:
		return l
	case o.Off:
		return RateLimits{}
	}
	for name, r := range o.Limits {
		if field, ok := rateLimitFields[name]; ok {
			*field(&l) = LimitOf(&r)
		}
	}
	return l
}

// Check refuses options the server cannot run with; every message names
// the option at fault, as the configuration spells it.
func (o *Options) Check() error {
	if err := o.checkRateLimits(); err != nil {
		return err
	}
	if err := o.checkVendors(); err != nil {
		return err
	}
	if err := CheckAuditRetention(o.AuditRetention.D()); err != nil {
		return fmt.Errorf("audit_retention: %v", err)
	}
	if err := CheckStepRetention(o.DoctorRetention.D()); err != nil {
		return fmt.Errorf("doctor_retention: %v", err)
	}
	if o.DPoPNonce && o.DPoP == policy.DPoPOff {
		return errors.New("dpop_nonce: needs dpop allowed or required; with dpop off no proof is read")
	}
	return nil
}

func (o *Options) checkRateLimits() error {
	if o.RateLimits == nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(o.RateLimits.Limits)) {
		if !IsRateLimit(name) {
			return fmt.Errorf("rate_limit: unknown limit %q (known: %s)", name, strings.Join(RateLimitNames, ", "))
		}
		r := o.RateLimits.Limits[name]
		if err := r.Check("rate_limit " + name); err != nil {
			return err
		}
	}
	return nil
}

var clientIDPattern = regexp.MustCompile(`^[A-Za-z0-9._~-]{1,128}$`)

func (o *Options) checkVendors() error {
	seen := map[string]bool{}
	for _, v := range o.Vendors {
		where := fmt.Sprintf("vendor %q", v.Name)
		switch {
		case strings.TrimSpace(v.Name) == "":
			return errors.New("vendor: a name is required")
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
		if err := policy.CheckScopes(where, v.Scopes); err != nil {
			return err
		}
	}
	return nil
}

// Defaults for the configurable lifetimes.
const (
	DefaultCodeTTL         = 60 * time.Second
	DefaultAccessTTL       = time.Hour
	DefaultRefreshTTL      = 30 * 24 * time.Hour
	DefaultRefreshGrace    = 10 * time.Second
	DefaultConsentTTL      = 10 * time.Minute
	DefaultKeyPublishDelay = time.Hour
	DefaultAuditRetention  = 180 * 24 * time.Hour
)

// Bounds of AuditRetention: a day, so that last night's incident can be
// looked into, and ten years.
const (
	MinAuditRetention = 24 * time.Hour
	MaxAuditRetention = 10 * 365 * 24 * time.Hour
)

// CheckAuditRetention refuses a retention outside its bounds; zero is the
// default.
func CheckAuditRetention(d time.Duration) error {
	if d != 0 && (d < MinAuditRetention || d > MaxAuditRetention) {
		return fmt.Errorf("%v is outside %v to %v (zero keeps the default, %v)", d, MinAuditRetention, MaxAuditRetention, DefaultAuditRetention)
	}
	return nil
}
