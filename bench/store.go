package main

import (
	"context"
	"fmt"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// startPostgres starts a durable PostgreSQL server (fsync and synchronous
// commit on, as in production) and returns the site block of a second
// school kept there, beside the bbolt one in the same Caddy.
func (s *stack) startPostgres() (string, error) {
	if _, err := pgcluster.BinDir(); err != nil {
		return "", fmt.Errorf("the store scenario needs PostgreSQL's server binaries (apt-get install postgresql): %v", err)
	}
	c, err := pgcluster.Start(pgcluster.Options{Durable: true})
	if err != nil {
		return "", err
	}
	s.pg = c
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, err := c.CreateDatabase(ctx, "bench")
	if err != nil {
		return "", err
	}
	addr, err := freeAddr()
	if err != nil {
		return "", err
	}
	s.pgGateway = "http://" + addr
	return fmt.Sprintf(`
%[1]s {
	school_gateway http://%[2]s {
		issuer %[1]s
		store postgres %[3]q {
			key_secret bench-key-secret
		}
		code_ttl 10m
		rate_limit off
		vendor "Bench Agent" {
			client_id %[4]s
			redirect_uri %[5]s
			audience member
			scopes %[6]s
		}
	}
}
`, s.pgGateway, s.upstreamAddr, dsn, benchClientID, benchRedirect, benchScope), nil
}

// storeSite is one school measured by the store scenario.
type storeSite struct {
	name  string
	oauth *oauthClient
	// exchanges, refreshes and misses at full concurrency, one stats per
	// round; one is the lone client's exchange.
	exch, refr, miss, one []stats
}

// store: the token endpoint and a protected request whose token the
// validation cache has never seen, for the bbolt school and the
// PostgreSQL school of the same Caddy, interleaved round by round.
func (b *bench) store() error {
	sites := []*storeSite{
		{name: "bbolt", oauth: b.oauth},
		{name: "PostgreSQL", oauth: &oauthClient{origin: b.stack.pgGateway, http: b.client}},
	}
	for r := 0; r < min(b.cfg.rounds, 3); r++ {
		for _, s := range sites {
			if err := b.storeRound(s); err != nil {
				return fmt.Errorf("store scenario, %s: %v", s.name, err)
			}
		}
	}
	for _, s := range sites {
		codes, _, err := b.codesAt(s.oauth, min(b.cfg.exchanges, 300))
		if err != nil {
			return err
		}
		_, one, err := b.exchangeAt(s.oauth, 1, codes)
		if err != nil {
			return err
		}
		s.one = append(s.one, one)
	}
	c := b.cfg.concurrency
	for _, m := range []struct {
		name string
		runs func(*storeSite) []stats
	}{
		{fmt.Sprintf("code exchange + ID token, %d clients", c), func(s *storeSite) []stats { return s.exch }},
		{fmt.Sprintf("refresh (rotation), %d clients", c), func(s *storeSite) []stats { return s.refr }},
		{fmt.Sprintf("protected request, token not cached, %d clients", c), func(s *storeSite) []stats { return s.miss }},
		{"code exchange, 1 client", func(s *storeSite) []stats { return s.one }},
	} {
		base := median(m.runs(sites[0]), stats.rps)
		for i, s := range sites {
			note := "baseline"
			if i > 0 {
				note = fmt.Sprintf("%.2f×", median(m.runs(s), stats.rps)/base)
			}
			b.row("store: "+m.name, s.name, m.runs(s), note)
		}
	}
	return nil
}

// storeRound exchanges a batch of codes, calls the Account API once with
// each new access token (a validation-cache miss each), and refreshes
// every grant.
func (b *bench) storeRound(s *storeSite) error {
	codes, _, err := b.codesAt(s.oauth, b.cfg.exchanges)
	if err != nil {
		return fmt.Errorf("authorize: %v", err)
	}
	issued, e, err := b.exchangeAt(s.oauth, b.cfg.concurrency, codes)
	if err != nil {
		return fmt.Errorf("code exchange: %v", err)
	}
	gw := s.oauth.origin + "/account/graphql"
	m, err := b.fixedWork(b.cfg.concurrency, len(issued.items), func(ctx context.Context, _ int) error {
		t, ok := issued.take()
		if !ok {
			return errPoolEmpty
		}
		return b.post(ctx, gw, t.Access, viewerQuery, nil, `"viewer"`)
	})
	if err != nil {
		return fmt.Errorf("protected request: %v", err)
	}
	issued.next.Store(0)
	f, err := b.fixedWork(b.cfg.concurrency, len(issued.items), func(ctx context.Context, _ int) error {
		t, ok := issued.take()
		if !ok {
			return errPoolEmpty
		}
		_, err := s.oauth.refresh(ctx, t.Refresh)
		return err
	})
	if err != nil {
		return fmt.Errorf("refresh: %v", err)
	}
	s.exch, s.miss, s.refr = append(s.exch, e), append(s.miss, m), append(s.refr, f)
	return nil
}

// codesAt prepares n codes at the school o speaks to.
func (b *bench) codesAt(o *oauthClient, n int) (*pool[pendingCode], stats, error) {
	p := &pool[pendingCode]{}
	s, err := b.fixedWork(b.cfg.concurrency, n, func(ctx context.Context, _ int) error {
		c, err := o.authorize(ctx)
		if err == nil {
			p.put(c)
		}
		return err
	})
	return p, s, err
}

// exchangeAt redeems every code with c clients and keeps the tokens.
func (b *bench) exchangeAt(o *oauthClient, c int, codes *pool[pendingCode]) (*pool[tokens], stats, error) {
	issued := &pool[tokens]{}
	s, err := b.fixedWork(c, len(codes.items), func(ctx context.Context, _ int) error {
		code, ok := codes.take()
		if !ok {
			return errPoolEmpty
		}
		t, err := o.exchange(ctx, code)
		if err == nil {
			issued.put(t)
		}
		return err
	})
	b.grants += s.requests - s.failures
	return issued, s, err
}
