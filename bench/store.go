package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
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
	// Its CPU time is counted with its backends' (cpu.go); 0 (not counted)
	// where /proc cannot tell.
	s.postmaster, _ = postmasterPID(ctx, dsn)
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
	// Exchanges, refreshes and misses at full concurrency, and the lone
	// client's exchange: one run of each per round.
	exch, refr, miss, one measured
}

// measured is one measure's runs, with the CPU each used.
type measured struct {
	runs []stats
	use  []cpuUse
}

func (m *measured) add(s stats, u cpuUse) {
	m.runs, m.use = append(m.runs, s), append(m.use, u)
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
	c := b.cfg.concurrency
	measures := []struct {
		name string
		of   func(*storeSite) *measured
	}{
		{fmt.Sprintf("code exchange + ID token, %d clients", c), func(s *storeSite) *measured { return &s.exch }},
		{fmt.Sprintf("refresh (rotation), %d clients", c), func(s *storeSite) *measured { return &s.refr }},
		{fmt.Sprintf("protected request, token not cached, %d clients", c), func(s *storeSite) *measured { return &s.miss }},
		{"code exchange, 1 client", func(s *storeSite) *measured { return &s.one }},
	}
	for _, m := range measures {
		base := median(m.of(sites[0]).runs, stats.rps)
		for i, s := range sites {
			note := "baseline"
			if i > 0 {
				note = fmt.Sprintf("%.2f×", median(m.of(s).runs, stats.rps)/base)
			}
			b.row("store: "+m.name, s.name, m.of(s).runs, note)
		}
	}
	fmt.Fprintf(&b.notes, "\nstore scenario, where the CPU went (median of the rounds): per answered request, "+
		"and the shares of the machine's %d CPUs busy, busy outside these processes (the kernel's own work, "+
		"anything else running), and idle waiting for I/O:\n\n", runtime.NumCPU())
	fmt.Fprintln(&b.notes, "| measure | store | Caddy CPU/req | PostgreSQL CPU/req | load generator + upstream CPU/req | machine busy | of which the rest | iowait | PostgreSQL disk writes/req |")
	fmt.Fprintln(&b.notes, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, m := range measures {
		for _, s := range sites {
			use := m.of(s).use
			med := func(f func(cpuUse) float64) float64 {
				v := make([]float64, len(use))
				for i, u := range use {
					v[i] = f(u)
				}
				slices.Sort(v)
				return v[len(v)/2]
			}
			fmt.Fprintf(&b.notes, "| %s | %s | %s | %s | %s | %.0f %% | %.0f %% | %.0f %% | %s |\n", m.name, s.name,
				us(med(func(u cpuUse) float64 { return float64(u.caddy) })),
				us(med(func(u cpuUse) float64 { return float64(u.db) })),
				us(med(func(u cpuUse) float64 { return float64(u.harness) })),
				100*med(func(u cpuUse) float64 { return u.busy }),
				100*med(func(u cpuUse) float64 { return u.rest }),
				100*med(func(u cpuUse) float64 { return u.iowait }),
				kb(med(func(u cpuUse) float64 { return u.dbWritten })))
		}
	}
	return nil
}

// storeRound exchanges a batch of codes, calls the Account API once with
// each new access token (a validation-cache miss each), refreshes every
// grant, and has a lone client exchange a few hundred more codes.
func (b *bench) storeRound(s *storeSite) error {
	codes, _, err := b.codesAt(s.oauth, b.cfg.exchanges)
	if err != nil {
		return fmt.Errorf("authorize: %v", err)
	}
	var issued *pool[tokens]
	err = b.measure(&s.exch, func() (st stats, err error) {
		issued, st, err = b.exchangeAt(s.oauth, b.cfg.concurrency, codes)
		return st, err
	})
	if err != nil {
		return fmt.Errorf("code exchange: %v", err)
	}
	gw := s.oauth.origin + "/account/graphql"
	err = b.measure(&s.miss, func() (stats, error) {
		return b.fixedWork(b.cfg.concurrency, len(issued.items), func(ctx context.Context, _ int) error {
			t, ok := issued.take()
			if !ok {
				return errPoolEmpty
			}
			return b.post(ctx, gw, t.Access, viewerQuery, nil, `"viewer"`)
		})
	})
	if err != nil {
		return fmt.Errorf("protected request: %v", err)
	}
	issued.next.Store(0)
	err = b.measure(&s.refr, func() (stats, error) {
		return b.fixedWork(b.cfg.concurrency, len(issued.items), func(ctx context.Context, _ int) error {
			t, ok := issued.take()
			if !ok {
				return errPoolEmpty
			}
			_, err := s.oauth.refresh(ctx, t.Refresh)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("refresh: %v", err)
	}
	lone, _, err := b.codesAt(s.oauth, min(b.cfg.exchanges, 300))
	if err != nil {
		return fmt.Errorf("authorize: %v", err)
	}
	err = b.measure(&s.one, func() (st stats, err error) {
		_, st, err = b.exchangeAt(s.oauth, 1, lone)
		return st, err
	})
	if err != nil {
		return fmt.Errorf("code exchange, 1 client: %v", err)
	}
	return nil
}

// measure runs fn and adds its run, and the CPU it used, to m.
func (b *bench) measure(m *measured, fn func() (stats, error)) error {
	before := b.stack.sampleCPU()
	s, err := fn()
	if err != nil {
		return err
	}
	m.add(s, before.use(b.stack.sampleCPU(), s.requests))
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
