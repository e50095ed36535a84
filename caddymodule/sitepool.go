package caddymodule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/caddyserver/caddy/v2"
)

// sites holds each school's state across config reloads, keyed by the
// school's whole configuration: a reload that changes one school of a
// thousand rebuilds that one, and the others are handed to the new config
// as they are (keys, catalog, index, documents, caches, background work).
var sites = caddy.NewUsagePool()

type pooledSite struct {
	s    *site
	stop context.CancelFunc
}

// Destruct ends the school's background work, stores what its usage
// counted and has not stored yet (so that a school let go of, reloaded
// or stopped with Caddy keeps its figures), and lets go of its store,
// once no config has the school.
func (p pooledSite) Destruct() error {
	p.stop()
	ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
	defer cancel()
	if err := p.s.FlushUsage(ctx); err != nil {
		p.s.log.Warn("storing the school's usage when letting go of it failed; the last minute's counts are lost",
			"issuer", p.s.Issuer(), "error", err)
	}
	return p.s.stored.release()
}

// siteKey names a school's state by its configuration. Placeholders
// such as {env.NAME} are part of it as written: a changed environment
// needs a changed configuration, or a restart, to be read again.
func (g *Gateway) siteKey() (string, error) {
	raw, err := json.Marshal(g)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

// acquireSite returns the running state of the school with this key,
// kept true, or builds it with build.
func acquireSite(key string, build func() (*site, context.CancelFunc, error)) (s *site, kept bool, err error) {
	v, loaded, err := sites.LoadOrNew(key, func() (caddy.Destructor, error) {
		s, stop, err := build()
		if err != nil {
			return nil, err
		}
		return pooledSite{s: s, stop: stop}, nil
	})
	if err != nil {
		return nil, false, err
	}
	return v.(pooledSite).s, loaded, nil
}

func releaseSite(key string) error {
	_, err := sites.Delete(key)
	return err
}
