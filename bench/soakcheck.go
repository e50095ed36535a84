package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// The soak's last check: a sample of the grants the token traffic holds,
// each either still working or refused for its stated reason. A third of
// those whose refresh token has been rotated present the rotated-out one
// again (past the 10 s refresh_grace): it must be refused invalid_grant,
// and, that reuse having revoked the grant, its access token refused
// too once the token caches (5 s) have let go of it. The rest must work:
// the access token at the Account API, the refresh token rotated, the new
// access token at the Account API.

// soakCheck is what the check found.
type soakCheck struct {
	sampled, issued, valid int
	// refused counts the refusals that were the expected ones, by their
	// stated reason.
	refused    map[string]int
	unexpected []string
	nUnexpect  int
}

func (c *soakCheck) bad(what string) {
	c.nUnexpect++
	c.unexpected = keepFew(c.unexpected, what)
}

// reWWWError is the error of a WWW-Authenticate challenge.
var reWWWError = regexp.MustCompile(`error="([^"]+)"`)

// checkTokens samples up to 300 grants, spread over the run, and checks
// them through alternating instances.
func (t *soakTraffic) checkTokens() soakCheck {
	var all []*soakGrant
	for _, g := range t.grants {
		all = append(all, g...)
	}
	c := soakCheck{issued: len(all), refused: map[string]int{}}
	if len(all) == 0 {
		c.bad("no grant was issued")
		return c
	}
	step := max(1, len(all)/300)
	var sample []*soakGrant
	for i := 0; i < len(all) && len(sample) < 300; i += step {
		sample = append(sample, all[i])
	}
	c.sampled = len(sample)
	ctx := context.Background()
	reused := map[*soakGrant]bool{}
	for i, g := range sample {
		if i%3 != 0 || g.rotatedOut == "" || time.Since(g.rotatedAt) < 15*time.Second {
			continue
		}
		at := t.instance(i)
		status, body, err := soakDo(ctx, at.client, http.MethodPost, t.s.issuer(g.school)+"/api/oauth/token", "", refreshForm(g.rotatedOut).Encode(), nil)
		if err == nil && status == http.StatusBadRequest && strings.Contains(string(body), `"invalid_grant"`) {
			c.refused["a rotated-out refresh token: invalid_grant"]++
			reused[g] = true
			continue
		}
		c.bad(fmt.Sprintf("%s: a rotated-out refresh token at %s: HTTP %d %v %.200s", g.school, at.name, status, err, body))
	}
	if len(reused) > 0 {
		time.Sleep(6 * time.Second) // past the token caches' 5 s
	}
	for i, g := range sample {
		at := t.instance(i + 1)
		status, body, err := soakDo(ctx, at.client, http.MethodPost, "http://"+t.s.host(g.school)+"/account/graphql", g.access, viewerQuery, nil)
		if reused[g] {
			if m := reWWWError.FindSubmatch(body); err == nil && status == http.StatusUnauthorized && m != nil {
				c.refused["its grant revoked by that reuse: access token 401 "+string(m[1])]++
			} else {
				c.bad(fmt.Sprintf("%s: the access token of a grant revoked by reuse, at %s: HTTP %d %v %.200s", g.school, at.name, status, err, body))
			}
			continue
		}
		if err != nil || status != http.StatusOK {
			c.bad(fmt.Sprintf("%s: the access token at %s: HTTP %d %v %.200s", g.school, at.name, status, err, body))
			continue
		}
		tok, ok := t.tokenCall(ctx, "end check: refresh", at, g.school, refreshForm(g.refresh))
		if !ok {
			c.bad(fmt.Sprintf("%s: its refresh token at %s was not rotated (see the token: refresh row)", g.school, at.name))
			continue
		}
		status, body, err = soakDo(ctx, at.client, http.MethodPost, "http://"+t.s.host(g.school)+"/account/graphql", tok.Access, viewerQuery, nil)
		if err != nil || status != http.StatusOK {
			c.bad(fmt.Sprintf("%s: the access token of the end's rotation at %s: HTTP %d %v %.200s", g.school, at.name, status, err, body))
			continue
		}
		c.valid++
	}
	return c
}
