package caddymodule

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/school"
)

// A platform school holds its proxy while it is built or its stand-in
// serves, and lets go of it when it is let go of past max_active, changed,
// disabled, removed, rebuilt or ended with the platform.
func TestPlatformReleasesProxies(t *testing.T) {
	tp := newTestPlatform(t, 1)
	broken := tp.brokenData(t)
	for _, s := range []string{"a", "b", "c"} {
		tp.put(t, "https://"+s+".example", nil, "")
	}
	tp.put(t, "https://failed.example", nil, `,"data":`+strconv.Quote(broken))
	tp.put(t, "https://gone.example", nil, `,"data":`+strconv.Quote(broken))
	check := func(when string, want map[string]int) {
		t.Helper()
		for issuer, n := range want {
			if got := tp.upstream.holds(issuer); got != n {
				t.Errorf("%s: %s's proxy is held %d times, want %d", when, issuer, got, n)
			}
		}
	}
	tp.do(t, "https://a.example"+discoveryPath)
	check("a built", map[string]int{"https://a.example": 1})
	tp.do(t, "https://b.example"+discoveryPath)
	check("a let go of past max_active", map[string]int{"https://a.example": 0, "https://b.example": 1})
	b := tp.put(t, "https://b.example", nil, `,"code_ttl":"30s"`)
	check("b changed", map[string]int{"https://b.example": 1})
	b.Disabled = true
	if _, err := tp.reg.Put(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	check("b disabled", map[string]int{"https://b.example": 0})
	tp.do(t, "https://c.example"+discoveryPath)
	if err := tp.reg.Remove(t.Context(), "https://c.example"); err != nil {
		t.Fatal(err)
	}
	check("c removed", map[string]int{"https://c.example": 0})

	tp.do(t, "https://gone.example"+discoveryPath)
	tp.do(t, "https://failed.example"+discoveryPath)
	check("two failed", map[string]int{"https://gone.example": 1, "https://failed.example": 1})
	if err := tp.reg.Remove(t.Context(), "https://gone.example"); err != nil {
		t.Fatal(err)
	}
	check("a failed school removed", map[string]int{"https://gone.example": 0})
	if err := os.Remove(filepath.Join(broken, "school.db")); err != nil {
		t.Fatal(err)
	}
	if e := tp.school("https://failed.example"); !e.Rebuild(e.Failed()) {
		t.Fatal("the repaired school did not build")
	}
	check("a failed school rebuilt", map[string]int{"https://failed.example": 1})
	tp.do(t, "https://a.example"+discoveryPath)
	tp.end(t)
	check("the platform ended", map[string]int{"https://a.example": 0, "https://failed.example": 0})
}

// The config's proxies for platform schools are shared by the schools of
// one legacy server, and ended (their own context, which their
// provisioning started its work with) when the last school holding one
// lets go of it; a site block's proxy is held until the config ends.
func TestPlatformProxyPool(t *testing.T) {
	tp := newTestPlatform(t, 10)
	tp.platform.upstream = tp.proxyFor
	put := func(issuer, upstream string) {
		t.Helper()
		cfg := json.RawMessage(`{"upstream":` + strconv.Quote(upstream) + `}`)
		if _, err := tp.reg.Put(t.Context(), registry.Record{Issuer: issuer, Config: cfg}); err != nil {
			t.Fatal(err)
		}
	}
	put("https://a.example", "http://127.0.0.1:9")
	put("https://b.example", "http://127.0.0.1:9")
	put("https://c.example", "http://127.0.0.1:10")
	siteBlock, err := tp.app.proxy(tp.ctx, mustProxyJSON(t, "http://127.0.0.1:10"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a", "b", "c"} {
		tp.do(t, "https://"+s+".example"+discoveryPath)
	}
	shared, withSiteBlock := tp.pooledProxy(t, "http://127.0.0.1:9"), tp.pooledProxy(t, "http://127.0.0.1:10")
	if shared == nil || shared.refs != 2 || withSiteBlock == nil || withSiteBlock.refs != 2 || withSiteBlock.h != siteBlock {
		t.Fatalf("the proxies are not shared: %+v %+v", shared, withSiteBlock)
	}
	if err := tp.reg.Remove(t.Context(), "https://a.example"); err != nil {
		t.Fatal(err)
	}
	if shared.refs != 1 || shared.ctx.Err() != nil {
		t.Fatalf("b's proxy was ended with a's school: %d holds, %v", shared.refs, shared.ctx.Err())
	}
	for _, issuer := range []string{"https://b.example", "https://c.example"} {
		if err := tp.reg.Remove(t.Context(), issuer); err != nil {
			t.Fatal(err)
		}
	}
	if tp.pooledProxy(t, "http://127.0.0.1:9") != nil || shared.ctx.Err() == nil {
		t.Error("the proxy of the removed schools is still in the pool, or its work goes on")
	}
	if p := tp.pooledProxy(t, "http://127.0.0.1:10"); p == nil || p.refs != 1 {
		t.Errorf("the site block's proxy was let go of with the platform's school: %+v", p)
	}
}

// mustProxyJSON is the configuration of the proxy to upstream.
func mustProxyJSON(t *testing.T, upstream string) json.RawMessage {
	t.Helper()
	rp, err := defaultUpstreamProxy(upstream, school.DefaultLegacyTimeout)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(rp)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// pooledProxy is the config's proxy to upstream, nil if it has none.
func (tp *testPlatform) pooledProxy(t *testing.T, upstream string) *pooledProxy {
	t.Helper()
	raw := mustProxyJSON(t, upstream)
	tp.app.mu.Lock()
	defer tp.app.mu.Unlock()
	return tp.app.proxies[sha256.Sum256(raw)]
}
