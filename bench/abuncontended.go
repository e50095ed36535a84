package main

import (
	"context"
	"fmt"
)

// With -ab, the protected request and a discovery document through this
// tree's Caddy and the older build's, each serving the same one site with
// the same Caddyfile (but -ab-global's options for the older), interleaved
// round by round: what a lone school's requests cost now against the
// build before, uncontended (the fair share's gate, the spans and the
// doctor's noting must cost nothing measurable there).

// abProtected is the protected request's A/B; nothing without -ab.
func (b *bench) abProtected() error {
	o := b.stack.older
	if o == nil {
		return nil
	}
	member, err := memberToken(context.Background(), &oauthClient{origin: o.origin, http: b.client})
	if err != nil {
		return fmt.Errorf("a member token of build %s: %v", o.commit, err)
	}
	a := b.stack.thisAlone
	thisMember, err := memberToken(context.Background(), &oauthClient{origin: a.origin, http: b.client})
	if err != nil {
		return fmt.Errorf("a member token of this tree: %v", err)
	}
	this, older := a.origin+"/account/graphql", o.origin+"/account/graphql"
	return b.abRows("protected /account/graphql, A/B", o.commit,
		func(ctx context.Context, _ int) error {
			return b.post(ctx, this, thisMember.Access, viewerQuery, nil, `"viewer"`)
		},
		func(ctx context.Context, _ int) error {
			return b.post(ctx, older, member.Access, viewerQuery, nil, `"viewer"`)
		})
}

// abDiscovery is the discovery document's A/B; nothing without -ab.
func (b *bench) abDiscovery() error {
	o := b.stack.older
	if o == nil {
		return nil
	}
	const doc = "/.well-known/openid-configuration"
	return b.abRows("discovery, A/B", o.commit,
		func(ctx context.Context, _ int) error { return b.get(ctx, b.stack.thisAlone.origin+doc, `"issuer"`) },
		func(ctx context.Context, _ int) error { return b.get(ctx, o.origin+doc, `"issuer"`) })
}

// abRows runs this tree's request and the older build's interleaved and
// writes both rows, this tree's against the older build's.
func (b *bench) abRows(scenario, commit string, this, older func(context.Context, int) error) error {
	runs, err := b.interleave(scenario,
		target{name: "this tree", req: this, pid: b.stack.thisAlone.pid, admin: b.stack.thisAlone.admin},
		target{name: "build " + commit, req: older, pid: b.stack.older.pid, admin: b.stack.older.admin})
	if err != nil {
		return err
	}
	ratio := median(runs[0], stats.rps) / median(runs[1], stats.rps)
	b.row(scenario, "this tree", runs[0], fmt.Sprintf("%.2f× build %s (target ≥ 0.98×)", ratio, commit))
	b.row(scenario, "build "+commit, runs[1], "baseline")
	return nil
}
