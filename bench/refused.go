package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// The token endpoint under a mix with refused exchanges: one code in ten
// redeemed with the PKCE verifier of another attempt (invalid_grant),
// the others as ever. Each refusal is noted for the connection doctor, so
// this row against an older build's (-ab) is what noting costs.

// refusedEvery is one exchange in refusedEvery redeemed with a wrong
// verifier.
const refusedEvery = 10

// mixRound authorizes a batch of codes and exchanges them, one in ten
// refused, at full concurrency.
func (b *bench) mixRound(t *tokenSite) error {
	p := &pool[pendingCode]{}
	if _, err := b.fixedWorkAt(t.pid(), b.cfg.concurrency, b.cfg.exchanges, func(ctx context.Context, _ int) error {
		c, err := t.oauth.authorize(ctx)
		if err == nil {
			p.put(c)
		}
		return err
	}); err != nil {
		return fmt.Errorf("authorize: %v", err)
	}
	mixed := &pool[mixedCode]{}
	for i, c := range p.items {
		mixed.put(mixedCode{c, i%refusedEvery == 0})
	}
	s, err := b.fixedWorkAt(t.pid(), b.cfg.concurrency, len(mixed.items), func(ctx context.Context, _ int) error {
		c, ok := mixed.take()
		if !ok {
			return errPoolEmpty
		}
		if c.refused {
			c.verifier = randomVerifier() // another attempt's
			return t.oauth.refusedExchange(ctx, c.pendingCode)
		}
		_, err := t.oauth.exchange(ctx, c.pendingCode)
		return err
	})
	if err != nil {
		return fmt.Errorf("mixed exchanges: %v", err)
	}
	t.mix = append(t.mix, s)
	return nil
}

// mixedCode is a code to redeem, and whether with a wrong verifier.
type mixedCode struct {
	pendingCode
	refused bool
}

// refusedExchange redeems a code with a verifier that does not match; the
// answer must be invalid_grant.
func (o *oauthClient) refusedExchange(ctx context.Context, c pendingCode) error {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {c.code},
		"redirect_uri": {benchRedirect}, "client_id": {benchClientID}, "code_verifier": {c.verifier},
		"resource": {o.origin}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, o.origin+"/api/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := o.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"invalid_grant"`) {
		return fmt.Errorf("a refused exchange answered HTTP %d %.200s", resp.StatusCode, body)
	}
	return nil
}
