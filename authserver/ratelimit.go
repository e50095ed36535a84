package authserver

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/schoolgate/schoolgate/store"
)

// Abuse limits on the endpoints anyone can call. Each limit is a token
// bucket per key (the caller's address, or the client_id); an exhausted
// bucket answers 429 with Retry-After and an RFC 6749 §5.2 body. The
// buckets live in bounded LRUs, so a flood of addresses costs memory only
// up to the bound (and evicts the least recently seen callers, whose
// buckets were the fullest anyway). Limits are per gateway instance.

// Limit is a sustained rate and a burst.
type Limit struct {
	Every time.Duration // one event per Every; 0 disables the limit
	Burst int
}

// Per is a helper for "n events per period".
func Per(n int, period time.Duration, burst int) Limit {
	if n <= 0 {
		return Limit{}
	}
	return Limit{Every: period / time.Duration(n), Burst: burst}
}

// RateLimits are the abuse limits of a site. The zero value of a field
// disables that limit; DefaultRateLimits are what a site gets unless the
// operator says otherwise.
type RateLimits struct {
	Register    Limit // POST /api/oauth/register, per address
	NewClients  Limit // registrations that create a client, per address
	Authorize   Limit // authorize and consent, per address
	Token       Limit // token endpoint, per address
	TokenClient Limit // token endpoint, per client_id
	Revoke      Limit // revocation and introspection, per address
	// MCPAnonymous limits the anonymous /mcp calls per address (the
	// school applies it, AllowAnonymousMCP).
	MCPAnonymous Limit
}

// DefaultRateLimits stop floods without getting in the way of real use:
// a person authorizes a few times a minute, an app refreshes once an hour
// per user, and a CLI registers once. A vendor serving many members from
// one address is what TokenClient and Token leave room for.
var DefaultRateLimits = RateLimits{
	Register:    Per(30, time.Minute, 30),
	NewClients:  Per(20, time.Hour, 20),
	Authorize:   Per(300, time.Minute, 100),
	Token:       Per(1200, time.Minute, 300),
	TokenClient: Per(6000, time.Minute, 1000),
	Revoke:      Per(600, time.Minute, 100),
	// An agent browsing the catalog calls a tool a few times a minute;
	// an AI vendor's servers call for all of its users from a few
	// addresses, as they do the token endpoint.
	MCPAnonymous: Per(1200, time.Minute, 300),
}

// maxLimiterKeys bounds each limiter's memory.
const maxLimiterKeys = 16384

// limiter is one limit applied per key.
type limiter struct {
	limit   Limit
	mu      sync.Mutex
	buckets *lru.Cache[string, *rate.Limiter]
}

func newLimiter(l Limit) *limiter {
	if l.Every <= 0 {
		return nil
	}
	c, _ := lru.New[string, *rate.Limiter](maxLimiterKeys)
	return &limiter{limit: l, buckets: c}
}

// allow takes one event for key; when refused, it says how long until
// the next one would be allowed. A nil limiter allows everything.
func (l *limiter) allow(key string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	b, ok := l.buckets.Get(key)
	if !ok {
		b = rate.NewLimiter(rate.Every(l.limit.Every), max(1, l.limit.Burst))
		l.buckets.Add(key, b)
	}
	l.mu.Unlock()
	r := b.ReserveN(now, 1)
	if !r.OK() {
		return false, l.limit.Every
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// limiters are a site's limiters.
type limiters struct {
	register, newClients, authorize, token, tokenClient, revoke, mcpAnonymous *limiter
}

// of returns the limiter of a route's class, nil for none.
func (l *limiters) of(c limitClass) *limiter {
	switch c {
	case limitAuthorize:
		return l.authorize
	case limitToken:
		return l.token
	case limitRevoke:
		return l.revoke
	case limitRegister:
		return l.register
	}
	return nil
}

func newLimiters(l RateLimits) limiters {
	return limiters{register: newLimiter(l.Register), newClients: newLimiter(l.NewClients),
		authorize: newLimiter(l.Authorize), token: newLimiter(l.Token),
		tokenClient: newLimiter(l.TokenClient), revoke: newLimiter(l.Revoke),
		mcpAnonymous: newLimiter(l.MCPAnonymous)}
}

// AllowAnonymousMCP takes one event of the anonymous /mcp limit of the
// request's address; refused, it says how long until the next would be
// allowed. The caller answers (in JSON-RPC) and counts the refusal.
func (s *Server) AllowAnonymousMCP(r *http.Request) (bool, time.Duration) {
	if s.limits.mcpAnonymous == nil {
		return true, 0
	}
	return s.limits.mcpAnonymous.allow(s.clientAddr(r), s.cfg.Now())
}

// clientAddr is the caller's address for limits: what the adapter says
// (Caddy's client_ip, which honours trusted_proxies), else the peer.
func (s *Server) clientAddr(r *http.Request) string {
	if s.cfg.ClientIP != nil {
		if ip := s.cfg.ClientIP(r); ip != "" {
			return ip
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// limited applies a limit to the request's address and answers 429 when
// it is exhausted; it reports whether the request was refused.
func (s *Server) limited(w http.ResponseWriter, r *http.Request, l *limiter, html bool) bool {
	return s.limitedKey(w, r, l, s.clientAddr(r), html)
}

func (s *Server) limitedKey(w http.ResponseWriter, r *http.Request, l *limiter, key string, html bool) bool {
	ok, wait := l.allow(key, s.cfg.Now())
	if ok {
		return false
	}
	s.cfg.Observer.Refused(routeFor(r.URL.Path).metricName(), "rate_limited")
	if rateLimitedSeen.Add(1)%rateLimitSample == 1 {
		s.logOnly(r.Context(), store.AuditEvent{Type: eventRateLimited, Outcome: "refused",
			Detail: fmt.Sprintf("%s; one refusal in %d is logged", r.URL.Path, rateLimitSample)})
	}
	secs := int(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(max(1, secs)))
	msg := fmt.Sprintf("too many requests; retry after %d s", max(1, secs))
	if html {
		s.errorPage(w, r, http.StatusTooManyRequests, "error.too_many")
		return true
	}
	writeOAuthError(w, &oauthError{Status: http.StatusTooManyRequests, Code: "temporarily_unavailable", Description: msg})
	return true
}
