// Package authserver is a school site's OAuth 2.0 / OpenID Connect
// authorization server: clients, authorization with PKCE and resource
// indicators, consent, tokens, refresh rotation, revocation,
// introspection, ID tokens and discovery. It is plain net/http and knows
// nothing of Caddy.
package authserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// Server is one site's authorization server.
type Server struct {
	cfg      Config
	store    store.Store
	keys     *Keys
	vendors  map[string]*store.Client
	cache    *tokenCache
	metadata *metadataResolver
	limits   limiters
	// dpop is the school's DPoP, guard what its protected resources
	// check requests with.
	dpop  *policy.DPoP
	guard policy.Guard
	// pages draw the HTML pages (pagesapi.go).
	pages Pages
	// docs are the encoded discovery documents (metadataDoc).
	docs [docKinds * 2]atomic.Pointer[[]byte]
	// steps are the connection steps noted and not yet stored
	// (doctor.go).
	steps stepLog
}

// New builds the authorization server of a site on its store. ctx bounds
// the store calls that load its keys and settings and, on a store that
// several instances share, how long the server follows their changes.
func New(ctx context.Context, cfg Config, store store.Store) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	keys, err := loadKeys(ctx, store, cfg.Now(), cfg.initialSettings())
	if err != nil {
		return nil, err
	}
	var metadata MetadataDocumentsConfig
	if cfg.MetadataDocuments != nil {
		metadata = *cfg.MetadataDocuments
	}
	s := &Server{cfg: cfg, store: store, keys: keys, vendors: vendorClients(cfg.Vendors),
		cache: newTokenCache(16384), metadata: newMetadataResolver(metadata, cfg.Now)}
	s.limits = newLimiters(cfg.RateLimits.limits())
	s.pages = Pages(plainPages{})
	if cfg.Pages != nil {
		s.pages = cfg.Pages(s)
	}
	if err := s.initSettings(ctx); err != nil {
		return nil, err
	}
	if s.dpop, err = newDPoP(ctx, &s.cfg, store); err != nil {
		return nil, err
	}
	s.guard = policy.Guard{Lookup: s, Origin: s.cfg.Issuer, DPoP: s.dpop, Refused: s.noteUseRefused}
	s.follow(ctx)
	return s, nil
}

func (c *Config) validate() error {
	if err := c.Options.Check(); err != nil {
		return err
	}
	issuer, err := policy.ParseOrigin(c.Issuer)
	if err != nil {
		return fmt.Errorf("issuer: %v", err)
	}
	c.Issuer = issuer
	if c.SessionURL == "" {
		return errors.New("session URL is required")
	}
	return nil
}

// Issuer returns the site's issuer (its origin).
func (s *Server) Issuer() string { return s.cfg.Issuer }

// Keys returns the site's signing keys.
func (s *Server) Keys() *Keys { return s.keys }

// setCORS lets browser-based clients read the endpoints' answers. None of
// them relies on cookies, so a wildcard origin is safe. The methods,
// headers and lifetime a browser may use are a preflight's answer only:
// the Fetch standard reads them there and nowhere else, and on every other
// answer they were 180 bytes and three headers for nothing (a discovery
// document's headers then outgrew the map net/http clones for them).
func setCORS(w http.ResponseWriter, preflight bool) {
	if preflight {
		policy.AllowCORS(w.Header(), "GET, POST, OPTIONS")
		return
	}
	policy.AllowCORS(w.Header(), "")
}

// purgeExpired runs one janitor pass, given at most one interval so that a
// slow store never stacks passes.
func (s *Server) purgeExpired(ctx context.Context, every time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, every)
	defer cancel()
	if !s.claim(ctx, "janitor", every) {
		return
	}
	// Keep records a while past expiry so replays are recognised.
	if err := s.store.PurgeExpired(ctx, s.cfg.Now().Add(-time.Hour)); err != nil {
		s.cfg.Logger.Warn("purging expired records", "error", err)
	}
	if _, err := s.store.PurgeAudit(ctx, s.cfg.Now().Add(-s.cfg.AuditRetention.D())); err != nil {
		s.cfg.Logger.Warn("purging audit events past their retention", "error", err)
	}
	s.purgeSteps(ctx)
}
