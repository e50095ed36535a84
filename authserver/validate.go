package authserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// cacheTTL bounds how long a validated token is served from memory. In
// this process a revocation purges the cache at once; the bound is for
// revocations made by another gateway instance on a shared store.
const cacheTTL = 5 * time.Second

// ErrInvalidToken covers unknown, expired, revoked and malformed tokens.
var ErrInvalidToken = policy.ErrInvalidToken

type cachedToken struct {
	tok      *policy.Token
	cachedAt time.Time
	gen      uint64
}

// tokenCache maps token digests to validated tokens. A purge bumps the
// generation, so entries cached before it are ignored without a lock. The
// key is the raw SHA-256 digest: a cache hit needs no hex string.
type tokenCache struct {
	lru *lru.Cache[[sha256.Size]byte, cachedToken]
	gen atomic.Uint64
}

func newTokenCache(size int) *tokenCache {
	c, _ := lru.New[[sha256.Size]byte, cachedToken](size)
	return &tokenCache{lru: c}
}

func (c *tokenCache) get(hash [sha256.Size]byte, now time.Time) *policy.Token {
	e, ok := c.lru.Get(hash)
	if !ok || e.gen != c.gen.Load() || now.Sub(e.cachedAt) > cacheTTL || !now.Before(e.tok.ExpiresAt) {
		return nil
	}
	return e.tok
}

func (c *tokenCache) put(hash [sha256.Size]byte, t *policy.Token, now time.Time, gen uint64) {
	c.lru.Add(hash, cachedToken{tok: t, cachedAt: now, gen: gen})
}

func (c *tokenCache) purge() {
	c.gen.Add(1)
	c.lru.Purge()
}

// LookupAccessToken validates an access token: hash, cache, store. It
// implements policy.Lookup.
func (s *Server) LookupAccessToken(ctx context.Context, raw string) (*policy.Token, error) {
	if !strings.HasPrefix(raw, prefixAccess) || len(raw) > 256 {
		return nil, ErrInvalidToken
	}
	// One look for the request's span, whose answer the rest reads:
	// tracing off, it is the one cost of tracing here (BENCHMARKS.md,
	// "Traces"), and span a no-op that records nothing.
	span := trace.SpanFromContext(ctx)
	if span.SpanContext().IsValid() {
		ctx, span = StartSpan(ctx, "schoolgate token validation", trace.SpanKindInternal)
		defer span.End()
		span.SetAttributes(AttrSchool.String(s.cfg.Issuer))
	}
	now := s.cfg.Now()
	// Hashed from a buffer on the stack (raw is at most 256 bytes): a
	// conversion of a string this long would be allocated per request.
	var buf [256]byte
	digest := sha256.Sum256(append(buf[:0], raw...))
	if t := s.cache.get(digest, now); t != nil {
		spanCacheHit(span, true, t.ClientID)
		s.cfg.Observer.TokenLookup(true)
		return t, nil
	}
	s.cfg.Observer.TokenLookup(false)
	spanCacheHit(span, false, "")
	gen := s.cache.gen.Load()
	t, g, err := s.store.GetToken(ctx, keyWithDigest(raw, digest))
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrInvalidToken
	}
	if err != nil {
		// The caller answers 503 and has no logger of its own for why.
		s.cfg.Logger.Error("store failed: validating an access token", "error", err)
		return nil, err
	}
	switch {
	case t.Kind != store.TokenAccess:
		return nil, ErrInvalidToken
	case t.Revoked || g.Revoked:
		s.noteStep(StepUse, t.ClientID, g.Identity.Subject, ReasonTokenRevoked, "invalid_token", "")
		return nil, ErrInvalidToken
	case !now.Before(t.ExpiresAt):
		s.noteStep(StepUse, t.ClientID, g.Identity.Subject, ReasonTokenExpired, "invalid_token", "")
		return nil, ErrInvalidToken
	}
	// A token read from the store, not the cache: its first use here, or
	// its first in a while, which is what the doctor shows.
	s.passed(StepUse, t.ClientID, "")
	if span.IsRecording() {
		span.SetAttributes(AttrClientID.String(t.ClientID))
	}
	pt := s.policyToken(t, g)
	s.cache.put(digest, pt, now, gen)
	return pt, nil
}

// policyToken is the view of a token that the protected resources and
// introspection share, so what is enforced is what is reported.
func (s *Server) policyToken(t *store.Token, g *store.Grant) *policy.Token {
	return &policy.Token{
		Subject:   g.Identity.Subject,
		ClientID:  t.ClientID,
		Audience:  g.Audience,
		Scopes:    t.Scopes,
		Resource:  g.Resource,
		Issuer:    s.cfg.Issuer,
		IssuedAt:  t.IssuedAt,
		ExpiresAt: t.ExpiresAt,
		Email:     g.Identity.Email,
		Name:      g.Identity.Name,
		OrgID:     g.Identity.OrgID,
		Roles:     g.Identity.Roles,
		JKT:       t.JKT,
	}
}
