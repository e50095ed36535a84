package authserver

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/schoolgate/schoolgate/option"
)

// Config is one site's authorization server configuration: its options
// as the school's configuration declares them, and what the school
// works out or opens for it.
type Config struct {
	Options
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

	// ConsentTTL is how long a parked authorization request waits for
	// the person's decision. Default: DefaultConsentTTL.
	ConsentTTL time.Duration
	// KeyPublishDelay is how long a rotated key is published before it signs.
	KeyPublishDelay time.Duration

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

func (c *Config) setDefaults() {
	opt := func(d *option.Duration, v time.Duration) {
		if *d <= 0 {
			*d = option.Duration(v)
		}
	}
	opt(&c.CodeTTL, DefaultCodeTTL)
	opt(&c.AccessTTL, DefaultAccessTTL)
	opt(&c.RefreshTTL, DefaultRefreshTTL)
	opt(&c.RefreshGrace, DefaultRefreshGrace)
	if c.NoRefreshGrace {
		c.RefreshGrace = 0
	}
	opt(&c.AuditRetention, DefaultAuditRetention)
	opt(&c.DoctorRetention, DefaultStepRetention)
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ConsentTTL, DefaultConsentTTL)
	def(&c.KeyPublishDelay, DefaultKeyPublishDelay)
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
