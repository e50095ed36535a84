package main

import (
	"context"
	"fmt"
	"time"
)

// The token endpoint's scenario: codes prepared, exchanged and refreshed.

// codes prepares n authorization codes (remembered consent: authorize
// answers with the code at once).
func (b *bench) codes(n int) (*pool[pendingCode], stats, error) {
	p := &pool[pendingCode]{}
	s, err := b.fixedWork(b.cfg.concurrency, n, func(ctx context.Context, _ int) error {
		c, err := b.oauth.authorize(ctx)
		if err == nil {
			p.put(c)
		}
		return err
	})
	return p, s, err
}

// exchangeAll redeems every code of the pool with c clients.
func (b *bench) exchangeAll(c int, codes *pool[pendingCode]) (*pool[string], stats, error) {
	refresh := &pool[string]{}
	s, err := b.fixedWork(c, len(codes.items), func(ctx context.Context, _ int) error {
		code, ok := codes.take()
		if !ok {
			return errPoolEmpty
		}
		t, err := b.oauth.exchange(ctx, code)
		if err == nil {
			refresh.put(t.Refresh)
		}
		return err
	})
	b.grants += s.requests - s.failures
	return refresh, s, err
}

// tokenEndpoint: authorization-code exchanges (durable, with ID token)
// and refreshes at full concurrency, and a lone client's exchange. With
// -ab, the same for an older build's Caddy beside this one, round by
// round, each row against the older build's; this tree's then runs in a
// Caddy of the same Caddyfile as the older's (older.go), and -profile
// profiles nothing.
func (b *bench) tokenEndpoint() error {
	sites := []*tokenSite{{name: "this tree", oauth: b.oauth, pid: b.stack.caddyPID}}
	profile := true
	if o := b.stack.older; o != nil {
		a := b.stack.thisAlone
		sites[0] = &tokenSite{name: "this tree", oauth: &oauthClient{origin: a.origin, http: b.client}, pid: a.pid}
		sites = append(sites, &tokenSite{name: "build " + o.commit,
			oauth: &oauthClient{origin: o.origin, http: b.client}, pid: o.pid})
		profile = false
	}
	for r := 0; r < min(b.cfg.rounds, 3); r++ {
		for _, t := range sites {
			if err := b.tokenRound(t, profile && r == 0 && t == sites[0]); err != nil {
				return fmt.Errorf("%s: %v", t.name, err)
			}
		}
	}
	for _, t := range sites {
		codes, _, err := b.codesAt(t.oauth, min(b.cfg.exchanges, 300))
		if err != nil {
			return err
		}
		_, one, err := b.exchangeWith(t, 1, codes)
		if err != nil {
			return err
		}
		t.one = []stats{one}
	}
	c := b.cfg.concurrency
	for _, m := range []struct {
		name string
		of   func(*tokenSite) []stats
	}{
		{fmt.Sprintf("authorize → code, %d clients", c), func(t *tokenSite) []stats { return t.auth }},
		{fmt.Sprintf("code exchange + ID token, %d clients", c), func(t *tokenSite) []stats { return t.exch }},
		{fmt.Sprintf("refresh (rotation), %d clients", c), func(t *tokenSite) []stats { return t.refr }},
		{"code exchange, 1 client", func(t *tokenSite) []stats { return t.one }},
		{fmt.Sprintf("code exchange, 1 in %d refused (wrong verifier), %d clients", refusedEvery, c), func(t *tokenSite) []stats { return t.mix }},
	} {
		base := median(m.of(sites[len(sites)-1]), stats.rps)
		for i, t := range sites {
			name, note := m.name, ""
			if len(sites) > 1 {
				name, note = m.name+", "+t.name, "baseline"
				if i < len(sites)-1 {
					note = fmt.Sprintf("%.2f×", median(m.of(t), stats.rps)/base)
				}
			}
			b.row("token endpoint", name, m.of(t), note)
		}
	}
	// This tree's code exchanges with a DPoP proof, against its own
	// without (not with -ab: this tree's school then is the one alone).
	t := sites[0]
	if len(t.exchDPoP) == 0 {
		return nil
	}
	b.row("token endpoint", fmt.Sprintf("code exchange + ID token + DPoP %s proof, %d clients", b.cfg.dpopAlg, c), t.exchDPoP,
		fmt.Sprintf("%.2f× without DPoP (target ≥ 0.9×)", median(t.exchDPoP, stats.rps)/median(t.exch, stats.rps)))
	return nil
}

// tokenSite is one Caddy's school measured by the token scenario, and
// its runs.
type tokenSite struct {
	name                  string
	oauth                 *oauthClient
	pid                   func() int
	auth, exch, refr, one []stats
	// servers are the processes whose CPU its exchanges and refreshes
	// cost (-peers; opcpu.go), none elsewhere.
	servers []serverProc
	// exchDPoP are the code exchanges with a DPoP proof, this tree's.
	exchDPoP []stats
	// mix are the code exchanges one in ten refused (refused.go).
	mix []stats
}

// tokenRound authorizes a batch of codes, exchanges them and refreshes
// every grant once, at full concurrency.
func (b *bench) tokenRound(t *tokenSite, profile bool) error {
	// This tree's exchanges with a DPoP proof come before the others in
	// every other round, so that neither always meets the fuller store.
	dpop, dpopFirst := t.oauth == b.oauth, len(t.exch)%2 == 1
	if dpop && dpopFirst {
		if err := b.dpopRound(t); err != nil {
			return err
		}
	}
	p := &pool[pendingCode]{}
	a, err := b.fixedWorkAt(t.pid(), b.cfg.concurrency, b.cfg.exchanges, func(ctx context.Context, _ int) error {
		c, err := t.oauth.authorize(ctx)
		if err == nil {
			p.put(c)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("authorize: %v", err)
	}
	if profile && b.cfg.profile == "token" {
		go b.stack.cpuProfile(2*time.Second, "bench-token-exchange.pprof")
	}
	var issued *pool[tokens]
	e, err := onServers(t.servers, func() (s stats, err error) {
		issued, s, err = b.exchangeWith(t, b.cfg.concurrency, p)
		return s, err
	})
	if err != nil {
		return fmt.Errorf("code exchange: %v", err)
	}
	if profile && b.cfg.profile == "token" {
		go b.stack.cpuProfile(2*time.Second, "bench-token-refresh.pprof")
	}
	f, err := onServers(t.servers, func() (stats, error) {
		return b.fixedWorkAt(t.pid(), b.cfg.concurrency, len(issued.items), func(ctx context.Context, _ int) error {
			tok, ok := issued.take()
			if !ok {
				return errPoolEmpty
			}
			_, err := t.oauth.refresh(ctx, tok.Refresh)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("refresh: %v", err)
	}
	t.auth, t.exch, t.refr = append(t.auth, a), append(t.exch, e), append(t.refr, f)
	if err := b.mixRound(t); err != nil {
		return err
	}
	if dpop && !dpopFirst {
		return b.dpopRound(t)
	}
	return nil
}

// exchangeWith redeems every code of the pool with c clients at t.
func (b *bench) exchangeWith(t *tokenSite, c int, codes *pool[pendingCode]) (*pool[tokens], stats, error) {
	issued := &pool[tokens]{}
	s, err := b.fixedWorkAt(t.pid(), c, len(codes.items), func(ctx context.Context, _ int) error {
		code, ok := codes.take()
		if !ok {
			return errPoolEmpty
		}
		tok, err := t.oauth.exchange(ctx, code)
		if err == nil {
			issued.put(tok)
		}
		return err
	})
	if t.oauth == b.oauth {
		b.grants += s.requests - s.failures
	}
	return issued, s, err
}
