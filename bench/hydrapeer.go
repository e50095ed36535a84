package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// scenarioHydra is Ory Hydra's scenario (hydra.go): selected by -peers,
// or by name with -only.
const scenarioHydra = "hydra"

// benchCache is the user's cache directory of the bench's builds.
func benchCache() string {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "schoolgate-bench")
}

// startHydra builds Hydra if need be, makes its database on the bench's
// PostgreSQL, runs its migrations, starts `hydra serve all` and makes the
// bench's key and client through its admin API.
func (s *stack) startHydra() (*peer, error) {
	if s.pg == nil {
		return nil, skipf("Hydra runs on the bench's PostgreSQL, which did not start: %s", s.pgMissing)
	}
	bin, err := hydraBinary(benchCache(), "go")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := s.pg.CreateDatabase(ctx, "hydra")
	if err != nil {
		return nil, err
	}
	dsn, err := hydraDSN(pg)
	if err != nil {
		return nil, err
	}
	publicAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	adminAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	secret := make([]byte, 24)
	_, _ = rand.Read(secret)
	conf := filepath.Join(s.dir, "hydra.yml")
	if err := os.WriteFile(conf, []byte(hydraConfig(dsn, publicAddr, adminAddr, hex.EncodeToString(secret))), 0o600); err != nil {
		return nil, err
	}
	migrate := exec.CommandContext(ctx, bin, "migrate", "sql", "up", "--read-from-env", "--yes", "--config", conf)
	migrate.Env = append(os.Environ(), "DSN="+dsn)
	if out, err := migrate.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("Hydra's migrations: %v: %.2000s", err, out)
	}
	logf, err := os.Create(filepath.Join(s.dir, "hydra.log"))
	if err != nil {
		return nil, err
	}
	// --dev: the bench's issuer is http on loopback; --sqa-opt-out: no
	// usage reports (the machine reaches no such host).
	cmd := exec.Command(bin, "serve", "all", "--dev", "--sqa-opt-out", "--config", conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &peer{what: "Ory Hydra " + hydraVersion, origin: "http://" + publicAddr, cmd: cmd}
	h := &hydraClient{public: p.origin, admin: "http://" + adminAddr, http: &http.Client{Timeout: 30 * time.Second}}
	if err := h.waitReady(time.Minute); err == nil {
		err = h.setup(ctx)
	}
	if err != nil {
		p.stop()
		log, _ := os.ReadFile(logf.Name())
		return nil, fmt.Errorf("Hydra did not start: %v; its log: %.2000s", err, log)
	}
	s.hydra = h
	return p, nil
}

// hydraSite is one side of the Hydra scenario: where its codes come from
// and where its access tokens are checked, besides what tokenSite has.
type hydraSite struct {
	*tokenSite
	codes func(n int) (*pool[pendingCode], error)
	works func(ctx context.Context, access string) error
	// reuseRefused: a refresh token used again right after its rotation
	// is refused (Hydra, no grace period); the gateway answers a repeat
	// within its grace window (refresh_grace, 10 s) as the first, for a
	// client that lost the answer, and refuses it later.
	reuseRefused bool
}

// hydraScenario: code exchanges (with an ES256 ID token) and refreshes at
// the gateway on bbolt, the gateway on PostgreSQL and Hydra on the same
// PostgreSQL server, round by round. Codes are prepared before each timed
// exchange, not timed: the gateway's through its authorization endpoint
// with remembered consent, Hydra's through its login and consent flow,
// accepted through its admin API. Timed: every code exchanged by 64
// clients, every refresh token then rotated once. Checked: every answer
// (a 200 with access, refresh and, for the exchange, ID token; a refresh
// token unlike the one rotated), and after each round that an access
// token works at its resource (the Account API; Hydra's introspection),
// that the ID token is ES256 and, at Hydra, that a rotated refresh token
// is refused.
func (b *bench) hydraScenario() error {
	if b.skippedRow(scenarioHydra) {
		return nil
	}
	p, h := b.stack.hydraPeer, b.stack.hydra
	h.http = b.client // its connections, and no redirect followed
	caddy, pg := processServer("Caddy", b.stack.caddyPID), postgresServer(b.stack.postmaster)
	gatewayAt := func(name string, o *oauthClient, servers ...serverProc) *hydraSite {
		return &hydraSite{
			tokenSite: &tokenSite{name: name, oauth: o, pid: b.stack.caddyPID, servers: servers},
			codes: func(n int) (*pool[pendingCode], error) {
				c, _, err := b.codesAt(o, n)
				return c, err
			},
			works: func(ctx context.Context, access string) error {
				return b.post(ctx, o.origin+"/account/graphql", access, viewerQuery, nil, `"viewer"`)
			},
		}
	}
	sites := []*hydraSite{
		gatewayAt("gateway (bbolt)", b.oauth, caddy),
		gatewayAt("gateway (store postgres)", &oauthClient{origin: b.stack.pgGateway, http: b.client}, caddy, pg),
		{
			tokenSite: &tokenSite{name: p.what, pid: p.pid, servers: []serverProc{processServer("Hydra", p.pid), pg},
				oauth: &oauthClient{origin: p.origin, http: b.client, peer: true, tokenPath: "/oauth2/token"}},
			codes: func(n int) (*pool[pendingCode], error) {
				c := &pool[pendingCode]{}
				_, err := b.fixedWork(b.cfg.concurrency, n, func(ctx context.Context, _ int) error {
					code, err := h.code(ctx)
					if err == nil {
						c.put(code)
					}
					return err
				})
				return c, err
			},
			works:        h.introspect,
			reuseRefused: true,
		},
	}
	for r := 0; r < min(b.cfg.rounds, 3); r++ {
		for _, s := range sites {
			if err := b.hydraRound(s); err != nil {
				return fmt.Errorf("%s: %v", s.name, err)
			}
		}
	}
	c, sc := b.cfg.concurrency, "token endpoint, Hydra"
	hy := sites[2]
	for _, s := range sites {
		var base []stats
		if s != hy {
			base = hy.exch
		}
		b.peerRow(sc, fmt.Sprintf("code exchange + ES256 ID token, %d clients: %s", c, s.name), s.exch, base)
	}
	for _, s := range sites {
		var base []stats
		if s != hy {
			base = hy.refr
		}
		b.peerRow(sc, fmt.Sprintf("refresh, %d clients: %s", c, s.name), s.refr, base)
	}
	b.targetNote("Hydra, code exchange, gateway (store postgres)", sites[1].exch, hy.exch, "≥ 2×", "≤ 0.5×")
	b.targetNote("Hydra, refresh, gateway (store postgres)", sites[1].refr, hy.refr, "≥ 2×", "")
	b.targetNote("Hydra, code exchange, gateway (bbolt)", sites[0].exch, hy.exch, "≥ 3×", "")
	fmt.Fprintf(&b.notes, "\ntoken endpoint, Hydra: ratios in the table are this row ÷ %s's; CPU is each server process's "+
		"own, PostgreSQL's with its backends and workers (the same server for the gateway's postgres school and Hydra, "+
		"each in its own database). %s answers a refresh with an ID token (openid was granted; it cannot be narrowed "+
		"away), the gateway with none. Hydra's pool holds %d connections, as the gateway's pgstore by default. "+
		"%d codes a round on each side.\n", hy.name, hy.name, hydraMaxConns, min(b.cfg.exchanges, hydraExchanges))
	return nil
}

// hydraRound prepares codes at s, exchanges them and refreshes every
// grant once, timed and with its servers' CPU, then checks a sample.
func (b *bench) hydraRound(s *hydraSite) error {
	codes, err := s.codes(min(b.cfg.exchanges, hydraExchanges))
	if err != nil {
		return fmt.Errorf("preparing codes: %v", err)
	}
	var issued *pool[tokens]
	e, err := onServers(s.servers, func() (st stats, err error) {
		issued, st, err = b.exchangeWith(s.tokenSite, b.cfg.concurrency, codes)
		return st, err
	})
	if err != nil {
		return fmt.Errorf("code exchange: %v", err)
	}
	rotated := &pool[[2]tokens]{} // the tokens refreshed, and their successors
	f, err := onServers(s.servers, func() (stats, error) {
		return b.fixedWorkAt(s.pid(), b.cfg.concurrency, len(issued.items), func(ctx context.Context, _ int) error {
			old, ok := issued.take()
			if !ok {
				return errPoolEmpty
			}
			n, err := s.oauth.refresh(ctx, old.Refresh)
			if err == nil && n.Refresh == old.Refresh {
				err = fmt.Errorf("the refresh token was not rotated")
			}
			if err == nil {
				rotated.put([2]tokens{old, n})
			}
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("refresh: %v", err)
	}
	s.exch, s.refr = append(s.exch, e), append(s.refr, f)
	if len(rotated.items) == 0 {
		return nil
	}
	return checkTokens(context.Background(), s, rotated.items[0][0], rotated.items[0][1])
}

// checkTokens checks a grant after its rotation: the ID token is ES256,
// the new access token works at the resource and, where reuse is refused
// at once, the old refresh token is (the grant may be revoked for it:
// done last).
func checkTokens(ctx context.Context, s *hydraSite, old, cur tokens) error {
	if alg := jwtAlg(old.IDToken); alg != "ES256" {
		return fmt.Errorf("an ID token signed %q, not ES256", alg)
	}
	if err := s.works(ctx, cur.Access); err != nil {
		return fmt.Errorf("the access token does not work at the resource: %v", err)
	}
	if !s.reuseRefused {
		return nil
	}
	if _, err := s.oauth.refresh(ctx, old.Refresh); err == nil {
		return fmt.Errorf("a rotated refresh token was accepted again")
	} else if !strings.Contains(err.Error(), "HTTP 400") {
		return fmt.Errorf("a rotated refresh token: %v, not 400", err)
	}
	return nil
}

// jwtAlg is the alg of a compact JWS's header, "" when it has none.
func jwtAlg(jws string) string {
	head, _, _ := strings.Cut(jws, ".")
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Alg string `json:"alg"`
	}
	_ = json.Unmarshal(raw, &h)
	return h.Alg
}
