package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// oauthLoad is an HTTP-only OAuth client for load tests, after
// bench/oauth.go: a browser signed in at the demo school once, whose
// consent to the client (a vendor with an https redirect URI) is then
// remembered, so that authorize answers at once with a 302 carrying the
// code; plus the token, introspection and
// revocation calls of a public client. Its methods are safe for
// concurrent use and never fail the test themselves: they return what
// happened, transport errors included, for the caller to judge.
type oauthLoad struct {
	origin, clientID, redirect, scope string
	http                              *http.Client
}

// reply is one answer, or the transport error (or a body cut short) that
// took its place.
type reply struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func (r reply) String() string {
	if r.err != nil {
		return "transport error: " + r.err.Error()
	}
	return fmt.Sprintf("HTTP %d %.300s", r.status, r.body)
}

// oauthErr is the RFC 6749 error code of an answer, if any.
func (r reply) oauthErr() string {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(r.body, &e)
	return e.Error
}

// tokenPair is a token endpoint success.
type tokenPair struct {
	Access  string `json:"access_token"`
	Refresh string `json:"refresh_token"`
	IDToken string `json:"id_token"`
}

// pair decodes a complete 200 token response.
func (r reply) pair() (tokenPair, bool) {
	var p tokenPair
	if r.err != nil || r.status != http.StatusOK || json.Unmarshal(r.body, &p) != nil || p.Access == "" || p.Refresh == "" {
		return tokenPair{}, false
	}
	return p, true
}

// signInForLoad signs email in at the demo school through the gateway and
// approves the client once; the returned client's cookie jar keeps the
// school session.
func signInForLoad(t *testing.T, origin, clientID, redirect, scope, email, password string) *oauthLoad {
	t.Helper()
	return signInThrough(t, "", origin, clientID, redirect, scope, email, password)
}

// signInThrough is signInForLoad with the browser speaking to the
// instance at addr (host:port), the origin's host kept as the Host: a
// school of a platform, whose host names no address. addr "" is the
// origin itself.
func signInThrough(t *testing.T, addr, origin, clientID, redirect, scope, email, password string) *oauthLoad {
	t.Helper()
	b := newBrowser(t, redirect)
	if addr != "" {
		b.client.Transport = toHost{addr: addr, next: http.DefaultTransport}
	}
	v := oauth2.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect},
		"scope": {scope}, "state": {"s"}, "code_challenge": {pkceChallenge(v)},
		"code_challenge_method": {"S256"}, "resource": {origin}}
	if cb := b.signInAndApprove(origin, origin+"/oauth/authorize?"+q.Encode(), email, password); cb.Query().Get("code") == "" {
		t.Fatalf("sign-in ended at %s", cb)
	}
	return &oauthLoad{origin: origin, clientID: clientID, redirect: redirect, scope: scope,
		http: &http.Client{
			Jar:     b.client.Jar,
			Timeout: 15 * time.Second,
			Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256,
				IdleConnTimeout: 90 * time.Second, DisableCompression: true},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}
}

func pkceChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func (o *oauthLoad) do(req *http.Request) reply {
	resp, err := o.http.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: body, err: err}
}

// request sends a request with an optional bearer token and JSON body.
func (o *oauthLoad) request(ctx context.Context, method, path, token, body string, hdr map[string]string) reply {
	req, err := http.NewRequestWithContext(ctx, method, o.origin+path, strings.NewReader(body))
	if err != nil {
		return reply{err: err}
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return o.do(req)
}

func (o *oauthLoad) post(ctx context.Context, path string, form url.Values) reply {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.origin+path, strings.NewReader(form.Encode()))
	if err != nil {
		return reply{err: err}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return o.do(req)
}

// authorize asks for a code; with the consent remembered the answer is a
// 302 to the redirect URI with the code.
func (o *oauthLoad) authorize(ctx context.Context) (code, verifier string, r reply) {
	verifier = oauth2.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {o.clientID}, "redirect_uri": {o.redirect},
		"scope": {o.scope}, "state": {"s"}, "code_challenge": {pkceChallenge(verifier)},
		"code_challenge_method": {"S256"}, "resource": {o.origin}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.origin+"/oauth/authorize?"+q.Encode(), nil)
	if err != nil {
		return "", "", reply{err: err}
	}
	r = o.do(req)
	if r.err == nil && r.status == http.StatusFound {
		if loc, err := url.Parse(r.header.Get("Location")); err == nil && strings.HasPrefix(loc.String(), o.redirect) {
			code = loc.Query().Get("code")
		}
	}
	return code, verifier, r
}

func (o *oauthLoad) exchange(ctx context.Context, code, verifier string) reply {
	return o.post(ctx, "/api/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {o.redirect}, "client_id": {o.clientID}, "code_verifier": {verifier},
		"resource": {o.origin}})
}

func (o *oauthLoad) refresh(ctx context.Context, rt string) reply {
	return o.post(ctx, "/api/oauth/token", url.Values{"grant_type": {"refresh_token"},
		"refresh_token": {rt}, "client_id": {o.clientID}})
}

func (o *oauthLoad) introspect(ctx context.Context, token string) reply {
	return o.post(ctx, "/api/oauth/introspect", url.Values{"token": {token}, "client_id": {o.clientID}})
}

func (o *oauthLoad) revoke(ctx context.Context, token string) reply {
	return o.post(ctx, "/api/oauth/revoke", url.Values{"token": {token}, "client_id": {o.clientID}})
}

// parallel runs fn(0..n-1) on a few goroutines.
func parallel(n, workers int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// chain is one grant as a worker saw it: the code it was exchanged from
// and every token pair received for it, oldest first.
type chain struct {
	code, verifier string
	pairs          []tokenPair
	// cutRefresh: a refresh of the last pair's refresh token was in flight
	// at the kill and its answer never arrived.
	cutRefresh bool
	// revoked: the test's own replays revoked the grant after the restart.
	revoked bool
}

func (c *chain) last() tokenPair { return c.pairs[len(c.pairs)-1] }

// cutExchange is a code exchange whose answer the kill cut off.
type cutExchange struct{ code, verifier string }

const (
	durabilityWorkers   = 32
	durabilityKillAfter = 300 // successful code exchanges before the SIGKILL
	durabilityRefreshes = 2   // refreshes of each grant after its exchange
	loadScope           = "openid profile email account:read"
	studentSubject      = "member-1"
)

// TestCrashDurability runs concurrent code exchanges and refreshes against
// a real Caddy, kills it with SIGKILL after a fixed number of successful
// exchanges, restarts it on the same data directory and proves that
// everything a client received survived, exactly as issued, and that
// nothing is half-written: a token pair answered with 200 is committed
// (the store commits, with fsync, before the answer is written), and a
// request the kill cut off is either wholly done or not at all.
func TestCrashDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) { crashDurability(t, kind) })
	}
}

func crashDurability(t *testing.T, kind string) {
	began := time.Now()
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	// An https redirect URI: it proves the client, so the remembered
	// consent answers at once (a loopback one would show the page every
	// time). The load client never follows the redirect.
	redirect := "https://load-app.example/callback"
	// refresh_grace 1ms: a rotated refresh token is past its grace window
	// by the time the restarted Caddy sees it again, so a replay must be
	// refused (and revoke the grant) — which it only is if the rotation
	// was stored.
	extra := vendorBlock("Load App", "load-app", redirect, "member", loadScope) +
		"\t\trate_limit off\n\t\trefresh_grace 1ms\n"
	gw := startGateway(t, dir, siteBlockOn(t, kind, port, sch.URL, filepath.Join(dir, "site"), extra))
	o := signInForLoad(t, gw.URL, "load-app", redirect, loadScope, "student@demo.school", "student")
	kidsBefore := kids(t, gw.URL)

	var (
		mu        sync.Mutex
		chains    []*chain
		cutCodes  []cutExchange
		exchanges atomic.Int64
		killed    atomic.Bool
		killNow   = make(chan struct{})
		killOnce  sync.Once
	)
	ctx := t.Context()
	// fail reports a failure of the load phase; answers cut by the kill
	// are expected and not failures.
	fail := func(what string, r reply) {
		t.Errorf("during the load, %s: %v", what, r)
	}
	worker := func() {
		for !killed.Load() {
			code, verifier, r := o.authorize(ctx)
			if code == "" {
				if !killed.Load() {
					fail("authorize", r)
				}
				return // a cut authorize leaves at most an unused code
			}
			r = o.exchange(ctx, code, verifier)
			p, ok := r.pair()
			if !ok {
				if r.err != nil && killed.Load() {
					mu.Lock()
					cutCodes = append(cutCodes, cutExchange{code, verifier})
					mu.Unlock()
				} else {
					fail("exchange", r)
				}
				return
			}
			if p.IDToken == "" {
				t.Errorf("an exchange for openid returned no id_token: %s", r.body)
			}
			c := &chain{code: code, verifier: verifier, pairs: []tokenPair{p}}
			mu.Lock()
			chains = append(chains, c)
			mu.Unlock()
			if exchanges.Add(1) == durabilityKillAfter {
				killOnce.Do(func() { close(killNow) })
			}
			for range durabilityRefreshes {
				if killed.Load() {
					return
				}
				r := o.refresh(ctx, c.last().Refresh)
				p, ok := r.pair()
				if !ok {
					if r.err != nil && killed.Load() {
						mu.Lock()
						c.cutRefresh = true
						mu.Unlock()
					} else {
						fail("refresh", r)
					}
					return
				}
				mu.Lock()
				c.pairs = append(c.pairs, p)
				mu.Unlock()
			}
		}
	}
	var wg sync.WaitGroup
	for range durabilityWorkers {
		wg.Go(worker)
	}
	select {
	case <-killNow:
	case <-time.After(20 * time.Second):
		killed.Store(true)
		wg.Wait()
		t.Fatalf("only %d exchanges succeeded in 20 s", exchanges.Load())
	}
	killed.Store(true)
	gw.kill()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	loadTime := time.Since(began)
	received := 0
	for _, c := range chains {
		received += len(c.pairs)
	}
	cutRefreshes := 0
	for _, c := range chains {
		if c.cutRefresh {
			cutRefreshes++
		}
	}
	t.Logf("killed with SIGKILL after %d successful exchanges; %d token pairs received in %d grants; "+
		"cut off by the kill: %d exchanges, %d refreshes", exchanges.Load(), received, len(chains), len(cutCodes), cutRefreshes)

	restartAt := time.Now()
	gw.restart()
	t.Logf("restarted on the same data directory in %v", time.Since(restartAt).Round(time.Millisecond))
	if kidsAfter := kids(t, gw.URL); !slices.Equal(kidsBefore, kidsAfter) {
		t.Errorf("signing keys changed across the crash: %v, then %v", kidsBefore, kidsAfter)
	}

	// check judges an answer after the restart: never a 5xx, never a
	// transport error.
	check := func(what string, r reply) bool {
		if r.err != nil || r.status >= 500 {
			t.Errorf("after the restart, %s: %v", what, r)
			return false
		}
		return true
	}
	// active introspects a token and, when it is active, checks the whole
	// record: a half-written grant or token would lack a field.
	active := func(what, token, tokenType string) bool {
		r := o.introspect(ctx, token)
		if !check("introspecting "+what, r) {
			return false
		}
		var m map[string]any
		if r.status != 200 || json.Unmarshal(r.body, &m) != nil {
			t.Errorf("introspecting %s: %v", what, r)
			return false
		}
		if m["active"] != true {
			return false
		}
		if m["client_id"] != "load-app" || m["sub"] != studentSubject || m["aud"] != gw.URL ||
			m["iss"] != gw.URL || m["scope"] != loadScope || m["audience_type"] != "member" || m["token_type"] != tokenType {
			t.Errorf("introspecting %s: an inconsistent record: %v", what, m)
		}
		return true
	}
	wantInvalidGrant := func(what string, r reply) {
		if check(what, r) && (r.status != 400 || r.oauthErr() != "invalid_grant") {
			t.Errorf("%s: want 400 invalid_grant, got %v", what, r)
		}
	}

	// 1. Every access token received is active with its full record; every
	// refresh token but the last of each grant was rotated (past the
	// grace); the last is active unless a refresh of it was cut off, in
	// which case the store says whether that rotation was committed.
	committed := make([]bool, len(chains))
	parallel(len(chains), 8, func(i int) {
		c := chains[i]
		for j, p := range c.pairs {
			if !active(fmt.Sprintf("access token %d of grant %d", j, i), p.Access, "Bearer") {
				t.Errorf("access token %d of grant %d, received before the kill, is not active", j, i)
			}
			isLast := j == len(c.pairs)-1
			switch rt := active(fmt.Sprintf("refresh token %d of grant %d", j, i), p.Refresh, "refresh_token"); {
			case !isLast && rt:
				t.Errorf("refresh token %d of grant %d was rotated before the kill but is active", j, i)
			case isLast && !rt && !c.cutRefresh:
				t.Errorf("the last refresh token of grant %d, received before the kill, is not active", i)
			case isLast && !rt:
				committed[i] = true // its cut-off rotation was stored
			}
		}
	})

	// 2. The newest access token of every grant works at the protected API.
	parallel(len(chains), 8, func(i int) {
		r := o.request(ctx, http.MethodPost, "/account/graphql", chains[i].last().Access, viewerQuery, nil)
		if check("the account API", r) && (r.status != 200 || !strings.Contains(string(r.body), "student@demo.school")) {
			t.Errorf("the account API with the newest access token of grant %d: %v", i, r)
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	// 3. Requests the kill cut off were all or nothing. A cut exchange
	// either redeemed the code (a retry is refused) or left it untouched
	// (a retry issues working tokens); a cut refresh either rotated the
	// token (a retry is reuse, refused) or did not (a retry refreshes).
	var cutDone, cutUndone atomic.Int64
	parallel(len(cutCodes), 8, func(i int) {
		r := o.exchange(ctx, cutCodes[i].code, cutCodes[i].verifier)
		if !check("retrying a cut exchange", r) {
			return
		}
		if p, ok := r.pair(); ok {
			cutUndone.Add(1)
			if !active("tokens of a retried exchange", p.Access, "Bearer") {
				t.Errorf("a retried exchange issued an inactive access token")
			}
			return
		}
		cutDone.Add(1)
		wantInvalidGrant("retrying an exchange that was committed before the kill", r)
	})
	parallel(len(chains), 8, func(i int) {
		c := chains[i]
		if !c.cutRefresh {
			return
		}
		r := o.refresh(ctx, c.last().Refresh)
		if committed[i] {
			cutDone.Add(1)
			wantInvalidGrant(fmt.Sprintf("refreshing grant %d, whose rotation was committed before the kill", i), r)
			c.revoked = true // reuse detection revokes the grant
			return
		}
		cutUndone.Add(1)
		p, ok := r.pair()
		if !ok {
			check("retrying a cut refresh", r)
			t.Errorf("grant %d: the cut refresh was not committed, yet its refresh token is refused: %v", i, r)
			return
		}
		c.pairs = append(c.pairs, p)
		c.cutRefresh = false
	})
	t.Logf("cut-off requests after the restart: %d had been committed, %d had left no trace", cutDone.Load(), cutUndone.Load())

	// 4. The last refresh token of every other grant still refreshes.
	parallel(len(chains), 8, func(i int) {
		c := chains[i]
		if c.revoked {
			return
		}
		r := o.refresh(ctx, c.last().Refresh)
		p, ok := r.pair()
		if !ok {
			check("refreshing", r)
			t.Errorf("grant %d: the last refresh token received before the kill is refused: %v", i, r)
			return
		}
		c.pairs = append(c.pairs, p)
		if !active("a token refreshed after the restart", p.Access, "Bearer") {
			t.Errorf("grant %d: the access token refreshed after the restart is not active", i)
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	// 5. Rotations stayed rotated: replaying a refresh token rotated before
	// the kill is reuse, refused, and revokes the grant (odd grants).
	parallel(len(chains), 8, func(i int) {
		c := chains[i]
		if i%2 == 0 || c.revoked {
			return
		}
		wantInvalidGrant(fmt.Sprintf("replaying grant %d's first refresh token", i), o.refresh(ctx, c.pairs[0].Refresh))
		wantInvalidGrant(fmt.Sprintf("refreshing grant %d after reuse", i), o.refresh(ctx, c.last().Refresh))
		r := o.request(ctx, http.MethodPost, "/account/graphql", c.last().Access, viewerQuery, nil)
		if check("the account API", r) && r.status != 401 {
			t.Errorf("grant %d was revoked for refresh token reuse, yet its access token works: %v", i, r)
		}
		c.revoked = true
	})

	// 6. Codes used before the crash stay used: every replay is refused,
	// and revokes the grant it issued (checked on the even grants).
	parallel(len(chains), 8, func(i int) {
		c := chains[i]
		wantInvalidGrant(fmt.Sprintf("replaying grant %d's code", i), o.exchange(ctx, c.code, c.verifier))
		if c.revoked {
			return
		}
		if active("an access token of a replayed code", c.last().Access, "Bearer") {
			t.Errorf("grant %d: its code was replayed, yet its access token is active", i)
		}
	})

	if r := o.request(ctx, http.MethodGet, "/.well-known/openid-configuration", "", "", nil); r.err != nil || r.status != 200 {
		t.Errorf("discovery at the end: %v", r)
	}
	// The store opened cleanly and nothing since went wrong inside.
	if lines := errorLogs(gw.proc.out.String()); len(lines) > 0 {
		t.Errorf("the restarted Caddy logged errors:\n%s", strings.Join(lines, "\n"))
	}
	t.Logf("setup, load and kill took %v; the whole test %v", loadTime.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}
