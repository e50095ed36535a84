package authserver

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/schoolgate/schoolgate/policy"
)

// Config is one site's authorization server configuration.
type Config struct {
	// Issuer is the site origin: the issuer, the resource indicator and
	// the base of every URL the server publishes. Never taken from a request.
	Issuer string
	// SessionURL is the absolute URL of the legacy site's session endpoint.
	SessionURL string
	// LoginURL is where a browser that is not signed in is sent; a path is
	// taken relative to the issuer.
	LoginURL string
	// AdminPrefix is the path prefix of the admin API (for documents).
	AdminPrefix string
	// Vendors are clients configured in the Caddyfile.
	Vendors []VendorClient
	// MCPConnections is the initial value of the beta feature switch.
	MCPConnections bool
	// DPoP is what the school makes of DPoP (RFC 9449); the zero value
	// is policy.DPoPAllowed.
	DPoP policy.DPoPMode
	// DPoPNonce makes every DPoP proof carry a nonce of the school's
	// (RFC 9449 §8, §9).
	DPoPNonce bool

	CodeTTL      time.Duration
	AccessTTL    time.Duration
	RefreshTTL   time.Duration
	RefreshGrace time.Duration
	// NoRefreshGrace makes every second use of a refresh token a replay:
	// a client that lost the answer must authorize again.
	NoRefreshGrace bool
	ConsentTTL     time.Duration
	// AuditRetention is how long audit events are kept before the
	// janitor purges them (CheckAuditRetention).
	AuditRetention time.Duration
	// StepRetention is how long the connection doctor keeps an
	// application's steps after its last attempt (CheckStepRetention).
	StepRetention time.Duration
	// KeyPublishDelay is how long a rotated key is published before it signs.
	KeyPublishDelay time.Duration

	// MetadataDocuments configures Client ID Metadata Documents.
	MetadataDocuments MetadataDocumentsConfig

	// RateLimits are the abuse limits; nil means DefaultRateLimits.
	RateLimits *RateLimits
	// ClientIP names the caller for rate limits (the Caddy adapter passes
	// Caddy's client_ip, which honours trusted_proxies); nil means the
	// peer address.
	ClientIP func(*http.Request) string

	// Observer receives counts for metrics; nil counts nothing.
	Observer Observer

	// SessionClient performs session lookups at the legacy site.
	SessionClient *http.Client
	Logger        *slog.Logger
	// AuditLogger receives every audit event (audit.go); nil is Logger.
	// The Caddy adapter names it schoolgate.audit.
	AuditLogger *slog.Logger
	// RequestID names the request in audit events; nil names none.
	RequestID func(*http.Request) string
	// Now is the clock; tests replace it.
	Now func() time.Time
	// Pages makes the server's HTML pages once the server is built
	// (package pages' New); nil answers people's browsers in plain text,
	// without a consent page or the pages' areas.
	Pages func(*Server) Pages
}

// VendorClient is a client configured by the operator.
type VendorClient struct {
	ClientID     string
	Name         string
	RedirectURIs []string
	// Audience is "member" (default) or "operator".
	Audience string
	// Scopes the client may request; default depends on the audience.
	Scopes []string
	// Secret makes the client confidential (client_secret_post).
	Secret string
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

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.CodeTTL, DefaultCodeTTL)
	def(&c.AccessTTL, DefaultAccessTTL)
	def(&c.RefreshTTL, DefaultRefreshTTL)
	def(&c.RefreshGrace, DefaultRefreshGrace)
	if c.NoRefreshGrace {
		c.RefreshGrace = 0
	}
	def(&c.ConsentTTL, DefaultConsentTTL)
	def(&c.KeyPublishDelay, DefaultKeyPublishDelay)
	def(&c.AuditRetention, DefaultAuditRetention)
	def(&c.StepRetention, DefaultStepRetention)
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.SessionClient == nil {
		c.SessionClient = &http.Client{Timeout: 5 * time.Second}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.AuditLogger == nil {
		c.AuditLogger = c.Logger
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}
