package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// node-oidc-provider (-peers, scenario oidc-provider): an in-memory
// authorization server run by e2e/js/bench/oidc-provider.mjs, measured at
// the token endpoint beside the gateway (peers.go starts it).

// nodeBinary is the Node that runs oidc-provider: the test command's
// Node 22 when installed, else node on PATH, 20 or newer.
func nodeBinary() (bin, version string, err error) {
	for _, c := range []string{conformanceNode, "node"} {
		if c == conformanceNode {
			if _, err := os.Stat(c); err != nil {
				continue
			}
			c, _ = filepath.Abs(c)
		}
		out, err := exec.Command(c, "--version").Output()
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(out))
		major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(v, "v"), ".", 2)[0])
		if major >= 20 {
			return c, v, nil
		}
	}
	return "", "", skipf("node-oidc-provider needs Node.js 20 or newer (22 preferred) and none was found: " +
		"./scripts/prereqs.sh installs Node.js, `cd e2e/conformance && npm ci` adds the test command's Node 22")
}

// startOIDCProvider runs node-oidc-provider in memory (see the script).
func (s *stack) startOIDCProvider() (*peer, error) {
	node, nodeVersion, err := nodeBinary()
	if err != nil {
		return nil, err
	}
	pkg, err := os.ReadFile(filepath.Join(oidcProviderDir, "node_modules", "oidc-provider", "package.json"))
	if err != nil {
		return nil, skipf("node-oidc-provider is not installed: run `cd e2e/js && npm ci --no-audit --no-fund` " +
			"(it is a devDependency there), from the repository root")
	}
	var meta struct{ Version string }
	_ = json.Unmarshal(pkg, &meta)
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(addr, ":")
	logf, err := os.Create(filepath.Join(s.dir, "oidc-provider.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, oidcProviderScript, port)
	cmd.Dir = oidcProviderDir
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &peer{what: fmt.Sprintf("node-oidc-provider %s (Node %s)", meta.Version, nodeVersion),
		origin: "http://" + addr, cmd: cmd}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
			}
		}
		close(ready)
	}()
	select {
	case ok := <-ready:
		if ok {
			return p, nil
		}
	case <-time.After(60 * time.Second):
	}
	p.stop()
	return nil, fmt.Errorf("node-oidc-provider did not start (its log: %s)", logf.Name())
}

// oidcProviderScenario: code exchanges (with an ES256 ID token) and
// refreshes at the gateway and at node-oidc-provider, round by round.
// Codes are prepared before each timed exchange: the gateway's through
// its authorization endpoint with remembered consent (one HTTP request
// and one stored code each), oidc-provider's stored in a batch by the
// peer's script as its consent step would (a grant and a code each). The
// timed part is the same for both: every code exchanged by 64 clients,
// every refresh token then rotated once; at oidc-provider, which answers
// a refresh with an ID token when openid is in scope, the rotated tokens
// are rotated once more asking for every scope but openid (no ID token),
// as the gateway's refresh answers.
func (b *bench) oidcProviderScenario() error {
	if b.skippedRow(scenarioOIDCProvider) {
		return nil
	}
	p := b.stack.oidcProvider
	gw := &tokenSite{name: "gateway", oauth: b.oauth, pid: b.stack.caddyPID,
		servers: []serverProc{processServer("Caddy", b.stack.caddyPID)}}
	op := &tokenSite{name: p.what, oauth: &oauthClient{origin: p.origin, http: b.client, peer: true}, pid: p.pid,
		servers: []serverProc{processServer("node", p.pid)}}
	var opRefreshBare []stats
	for r := 0; r < min(b.cfg.rounds, 3); r++ {
		if err := b.tokenRound(gw, false); err != nil {
			return fmt.Errorf("gateway: %v", err)
		}
		bare, err := b.peerTokenRound(op)
		if err != nil {
			return fmt.Errorf("%s: %v", p.what, err)
		}
		opRefreshBare = append(opRefreshBare, bare)
	}
	c := b.cfg.concurrency
	sc := "token endpoint, peers"
	b.peerRow(sc, fmt.Sprintf("code exchange + ES256 ID token, %d clients: gateway (bbolt)", c), gw.exch, nil)
	b.peerRow(sc, fmt.Sprintf("code exchange + ES256 ID token, %d clients: %s", c, p.what), op.exch, gw.exch)
	b.peerRow(sc, fmt.Sprintf("refresh, %d clients: gateway (bbolt, no ID token)", c), gw.refr, nil)
	b.peerRow(sc, fmt.Sprintf("refresh, %d clients: %s, with its ID token", c, p.what), op.refr, gw.refr)
	b.peerRow(sc, fmt.Sprintf("refresh, %d clients: %s, no ID token (scope without openid)", c, p.what), opRefreshBare, gw.refr)
	b.targetNote("node-oidc-provider, code exchange", gw.exch, op.exch, "≥ 2.5×", "≤ 0.33×")
	b.targetNote("node-oidc-provider, refresh (its answer with an ID token)", gw.refr, op.refr, "≥ 2.5×", "≤ 0.33×")
	b.targetNote("node-oidc-provider, refresh (its answer without)", gw.refr, opRefreshBare, "", "")
	fmt.Fprintf(&b.notes, "\ntoken endpoint, peers: %s rows measure the node process and write nothing to disk "+
		"(its store is in memory and emptied after each round); the gateway's are Caddy's, with bbolt and its fsyncs. "+
		"Ratios in the table are this row ÷ the gateway's.\n", p.what)
	return nil
}

// peerTokenRound is tokenRound for node-oidc-provider: codes minted by
// its script, exchanged, refreshed with an ID token, refreshed without;
// then its store is emptied so that rounds do not pile up in its heap.
func (b *bench) peerTokenRound(t *tokenSite) (stats, error) {
	codes, err := b.peerCodes(t.oauth.origin, b.cfg.exchanges)
	if err != nil {
		return stats{}, err
	}
	var issued *pool[tokens]
	e, err := onServers(t.servers, func() (s stats, err error) {
		issued, s, err = b.exchangeWith(t, b.cfg.concurrency, codes)
		return s, err
	})
	if err != nil {
		return stats{}, fmt.Errorf("code exchange: %v", err)
	}
	rotated := &pool[tokens]{}
	f, err := onServers(t.servers, func() (stats, error) {
		return b.fixedWorkAt(t.pid(), b.cfg.concurrency, len(issued.items), func(ctx context.Context, _ int) error {
			tok, ok := issued.take()
			if !ok {
				return errPoolEmpty
			}
			n, err := t.oauth.token(ctx, refreshForm(tok.Refresh), idRequired)
			if err == nil {
				rotated.put(n)
			}
			return err
		})
	})
	if err != nil {
		return stats{}, fmt.Errorf("refresh: %v", err)
	}
	bare, err := onServers(t.servers, func() (stats, error) {
		return b.fixedWorkAt(t.pid(), b.cfg.concurrency, len(rotated.items), func(ctx context.Context, _ int) error {
			tok, ok := rotated.take()
			if !ok {
				return errPoolEmpty
			}
			_, err := t.oauth.refreshWithout(ctx, tok.Refresh)
			return err
		})
	})
	if err != nil {
		return stats{}, fmt.Errorf("refresh without openid: %v", err)
	}
	t.exch, t.refr = append(t.exch, e), append(t.refr, f)
	resp, err := b.client.Post(t.oauth.origin+"/bench/reset", "", nil)
	if err != nil {
		return stats{}, err
	}
	resp.Body.Close()
	return bare, nil
}

// peerCodes has the oidc-provider script mint n codes, in batches.
func (b *bench) peerCodes(origin string, n int) (*pool[pendingCode], error) {
	p := &pool[pendingCode]{}
	for len(p.items) < n {
		batch := min(n-len(p.items), 2000)
		resp, err := b.client.Post(fmt.Sprintf("%s/bench/codes?n=%d", origin, batch), "", nil)
		if err != nil {
			return nil, err
		}
		var got []struct{ Code, Verifier string }
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(got) != batch {
			return nil, fmt.Errorf("minting codes: HTTP %d, %d codes, %v", resp.StatusCode, len(got), err)
		}
		for _, c := range got {
			p.items = append(p.items, pendingCode{c.Code, c.Verifier})
		}
	}
	return p, nil
}
