package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The peers (-peers): what an operator would run instead of the gateway,
// measured beside it in the same run. For the request path, Caddy's
// forward_auth asking oauth2-proxy, which validates a JWT bearer (the
// gateway's own ID token, against the gateway's JWKS, found through its
// discovery document); for the token endpoint, node-oidc-provider
// (oidcprovider.go) and Ory Hydra on PostgreSQL (hydra.go). None's source
// is in the repository: oauth2-proxy and Hydra are built from the Go
// module proxy into the user's cache directory, oidc-provider is a
// devDependency of e2e/js (npm ci) and runs e2e/js/bench/oidc-provider.mjs.
// Every row states each server process's CPU per operation (opcpu.go).

const (
	oauth2ProxyModule  = "github.com/oauth2-proxy/oauth2-proxy/v7"
	oidcProviderDir    = "e2e/js"
	oidcProviderScript = "bench/oidc-provider.mjs" // in oidcProviderDir
	// conformanceNode is the Node 22 the test command installs from npm
	// (e2e/conformance); oidc-provider supports 22 and runs on 20 with a
	// warning, so it is preferred when present.
	conformanceNode = "e2e/conformance/node_modules/node/bin/node"
)

// The peer scenarios: selected by -peers, or by name with -only.
const (
	scenarioForwardAuth  = "forward_auth"
	scenarioOIDCProvider = "oidc-provider"
)

// peer is one peer's process.
type peer struct {
	what   string // name and version, for the table
	origin string
	cmd    *exec.Cmd
}

func (p *peer) pid() int { return p.cmd.Process.Pid }

func (p *peer) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}

// skipError is a peer's missing prerequisite: the scenario is reported
// as skipped with what to install, never passed in silence.
type skipError struct{ msg string }

func (e *skipError) Error() string { return e.msg }

func skipf(format string, a ...any) error { return &skipError{fmt.Sprintf(format, a...)} }

// startPeers starts the selected peers. A missing prerequisite skips its
// scenario (b.skipped); any other failure ends the run.
func (s *stack) startPeers(cfg config) error {
	start := func(scenario string, f func() (*peer, error)) error {
		if !cfg.runsPeer(scenario) {
			return nil
		}
		p, err := f()
		var skip *skipError
		if errors.As(err, &skip) {
			s.skipped[scenario] = skip.msg
			fmt.Fprintf(os.Stderr, "bench: SKIPPED %s: %s\n", scenario, skip.msg)
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %v", scenario, err)
		}
		s.peers = append(s.peers, p)
		switch scenario {
		case scenarioForwardAuth:
			s.oauth2Proxy = p
		case scenarioOIDCProvider:
			s.oidcProvider = p
		case scenarioHydra:
			s.hydraPeer = p
		}
		return nil
	}
	if err := start(scenarioForwardAuth, s.startOAuth2Proxy); err != nil {
		return err
	}
	if err := start(scenarioOIDCProvider, s.startOIDCProvider); err != nil {
		return err
	}
	return start(scenarioHydra, s.startHydra)
}

// oauth2ProxyBinary builds the newest oauth2-proxy the module proxy
// serves, once per version, into the user's cache directory.
func oauth2ProxyBinary() (bin, version string, err error) {
	cache := benchCache()
	list := exec.Command("go", "list", "-m", "-f", "{{.Version}}", oauth2ProxyModule+"@latest")
	list.Dir = os.TempDir() // outside this module: the query is the module proxy's newest
	out, err := list.CombinedOutput()
	if err != nil {
		if bin, version := newestBuilt(cache); bin != "" {
			fmt.Fprintf(os.Stderr, "bench: the Go module proxy did not answer; oauth2-proxy %s built before\n", version)
			return bin, version, nil
		}
		return "", "", skipf("oauth2-proxy is built from the Go module proxy, which did not answer "+
			"(`go list -m %s@latest`: %v: %s); with the proxy reachable the bench builds it itself",
			oauth2ProxyModule, err, strings.TrimSpace(string(out)))
	}
	version = strings.TrimSpace(string(out))
	dir := filepath.Join(cache, "oauth2-proxy@"+version)
	bin = filepath.Join(dir, "oauth2-proxy")
	if _, err := os.Stat(bin); err == nil {
		return bin, version, nil
	}
	fmt.Fprintf(os.Stderr, "bench: building oauth2-proxy %s into %s (the first time takes a few minutes)\n", version, dir)
	install := exec.Command("go", "install", oauth2ProxyModule+"@"+version)
	install.Dir = os.TempDir()
	install.Env = append(os.Environ(), "GOBIN="+dir)
	if out, err := install.CombinedOutput(); err != nil {
		return "", "", skipf("could not build oauth2-proxy %s (`GOBIN=%s go install %s@%s`): %v: %.2000s",
			version, dir, oauth2ProxyModule, version, err, out)
	}
	return bin, version, nil
}

// newestBuilt is the newest oauth2-proxy built in cache before, if any.
func newestBuilt(cache string) (bin, version string) {
	found, _ := filepath.Glob(filepath.Join(cache, "oauth2-proxy@v*", "oauth2-proxy"))
	var best []int
	for _, f := range found {
		v := strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "oauth2-proxy@")
		var n []int
		for _, part := range strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3) {
			i, _ := strconv.Atoi(strings.SplitN(part, "-", 2)[0])
			n = append(n, i)
		}
		if slices.Compare(n, best) > 0 {
			best, bin, version = n, f, v
		}
	}
	return bin, version
}

// startOAuth2Proxy runs oauth2-proxy as forward_auth's authority: the
// gateway is its OpenID provider (discovery, JWKS), and a request with a
// bearer JWT it verifies (signature, issuer, audience bench-agent, expiry)
// is authenticated without a session cookie (--skip-jwt-bearer-tokens).
// Request logging is off: the bench's Caddy logs no requests either.
func (s *stack) startOAuth2Proxy() (*peer, error) {
	bin, version, err := oauth2ProxyBinary()
	if err != nil {
		return nil, err
	}
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	logf, err := os.Create(filepath.Join(s.dir, "oauth2-proxy.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin,
		"--http-address="+s.oauth2ProxyAddr,
		"--provider=oidc",
		"--oidc-issuer-url="+s.gateway,
		"--client-id="+benchClientID,
		"--client-secret=unused-bearer-tokens-only",
		"--cookie-secret="+hex.EncodeToString(secret),
		"--cookie-secure=false",
		"--email-domain=*",
		"--skip-jwt-bearer-tokens",
		"--set-xauthrequest",
		"--upstream=static://202",
		"--redirect-url="+s.forwardAuth+"/oauth2/callback",
		"--request-logging=false",
		"--auth-logging=false")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &peer{what: "oauth2-proxy " + version, origin: "http://" + s.oauth2ProxyAddr, cmd: cmd}
	if err := waitUp(p.origin+"/ping", http.StatusOK); err != nil {
		p.stop()
		return nil, fmt.Errorf("oauth2-proxy did not start (its log: %s): %v", logf.Name(), err)
	}
	return p, nil
}

// forwardAuthSite is the Caddy site of the forward_auth peer: oauth2-proxy
// asked first, then the same upstream with the same transport as the
// gateway's, the user and email it answers copied to the upstream.
func (s *stack) forwardAuthSite(transport string) string {
	return fmt.Sprintf(`
%[1]s {
	forward_auth %[2]s {
		uri /oauth2/auth
		copy_headers X-Auth-Request-User X-Auth-Request-Email
		%[4]s
	}
	reverse_proxy %[3]s {
		%[4]s
	}
}
`, s.forwardAuth, s.oauth2ProxyAddr, s.upstreamAddr, transport)
}

// skippedRow reports a skipped peer scenario in the table and the notes.
func (b *bench) skippedRow(scenario string) bool {
	why, ok := b.stack.skipped[scenario]
	if ok {
		b.peerHeader()
		fmt.Fprintf(&b.peerTable, "| %s | SKIPPED | | | | | | | |\n", scenario)
		fmt.Fprintf(&b.notes, "\nSKIPPED %s: %s\n", scenario, why)
	}
	return ok
}

// forwardAuthScenario: the protected request through the gateway, through
// forward_auth → oauth2-proxy and through plain reverse_proxy, one
// interleaved run. oauth2-proxy is handed an ID token of the gateway's
// (it validates JWTs; the gateway's access tokens are opaque), and must
// refuse a forged one before anything is measured.
func (b *bench) forwardAuthScenario() error {
	if b.skippedRow(scenarioForwardAuth) {
		return nil
	}
	ctx := context.Background()
	ids := &idTokens{oauth: b.oauth}
	first, err := ids.get(ctx)
	if err != nil {
		return err
	}
	fa := b.stack.forwardAuth + "/account/graphql"
	forged := first[:len(first)-4] + "AAAA"
	if err := b.post(ctx, fa, forged, viewerQuery, nil, ""); err == nil {
		return fmt.Errorf("forward_auth → oauth2-proxy let a forged ID token through")
	}
	if err := b.post(ctx, fa, first, viewerQuery, nil, `"viewer"`); err != nil {
		return fmt.Errorf("forward_auth → oauth2-proxy refused the gateway's ID token: %v", err)
	}
	p := b.stack.oauth2Proxy
	gw, plain := b.stack.gateway+"/account/graphql", b.stack.plain+"/account/graphql"
	caddy := processServer("Caddy", b.stack.caddyPID)
	targets := b.withAssertion(
		target{name: "gateway (member token)", req: func(ctx context.Context, _ int) error {
			return b.post(ctx, gw, b.member.Access, viewerQuery, nil, `"viewer"`)
		}},
		target{name: "forward_auth → " + p.what + " (JWT bearer)", servers: []serverProc{caddy, processServer("oauth2-proxy", p.pid)},
			req: func(ctx context.Context, _ int) error {
				tok, err := ids.get(ctx)
				if err != nil {
					return err
				}
				return b.post(ctx, fa, tok, viewerQuery, nil, `"viewer"`)
			}},
		target{name: "plain reverse_proxy", req: func(ctx context.Context, _ int) error {
			return b.post(ctx, plain, "", viewerQuery, nil, `"viewer"`)
		}})
	for i := range targets {
		if targets[i].servers == nil {
			targets[i].servers = []serverProc{caddy}
		}
	}
	sc := "protected, peers"
	runs, err := b.interleave(sc, targets...)
	if err != nil {
		return err
	}
	for i, t := range targets {
		var base []stats
		if i < len(targets)-1 {
			base = runs[len(runs)-1]
		}
		b.peerRow(sc, t.name, runs[i], base)
	}
	faRuns, plainRuns := runs[len(runs)-2], runs[len(runs)-1]
	fmt.Fprintf(&b.notes, "\nprotected, peers: p99 gateway %s, forward_auth → oauth2-proxy %s (%.2f× the gateway's), plain %s\n",
		ms(p99(runs[0])), ms(p99(faRuns)), p99(faRuns)/p99(runs[0]), ms(p99(plainRuns)))
	b.targetNote("protected, peers, forward_auth → oauth2-proxy (Caddy + oauth2-proxy)", runs[0], faRuns,
		"≥ 2.5×: forward_auth at most 0.4× the gateway's rate", "")
	b.assertionNote("protected, peers", runs)
	return nil
}

// idTokens hands out an ID token of the gateway's for forward_auth's
// requests, a new one when it is 5 minutes old: the gateway's live 10,
// and a long run (-rounds, -duration) outlasts one. Renewing is one
// authorization and exchange, rarely, inside one measured request.
type idTokens struct {
	oauth *oauthClient
	mu    sync.Mutex
	cur   atomic.Pointer[idToken]
}

type idToken struct {
	jwt string
	at  time.Time
}

const idTokenRenewal = 5 * time.Minute

func (s *idTokens) get(ctx context.Context) (string, error) {
	if c := s.cur.Load(); c != nil && time.Since(c.at) < idTokenRenewal {
		return c.jwt, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.cur.Load(); c != nil && time.Since(c.at) < idTokenRenewal {
		return c.jwt, nil
	}
	at := time.Now()
	code, err := s.oauth.authorize(ctx)
	if err != nil {
		return "", err
	}
	t, err := s.oauth.exchange(ctx, code)
	if err != nil {
		return "", err
	}
	s.cur.Store(&idToken{t.IDToken, at})
	return t.IDToken, nil
}
