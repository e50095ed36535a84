package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// Schools configured alike share one transport; a different configuration
// gets its own; the last to let go closes it.
func TestSharedTransport(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	defer upstream.Close()

	provisioned := func(dialTimeout time.Duration) *SharedTransport {
		t.Helper()
		st := new(SharedTransport)
		st.DialTimeout = caddy.Duration(dialTimeout)
		if err := st.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		return st
	}
	a, b := provisioned(5*time.Second), provisioned(5*time.Second)
	other := provisioned(7 * time.Second)
	if a.shared != b.shared {
		t.Fatal("two schools configured alike must share one transport")
	}
	if other.shared == a.shared {
		t.Fatal("a different configuration needs its own transport")
	}
	if n, _ := transports.References(a.key); n != 2 {
		t.Fatalf("references = %d, want 2", n)
	}

	req, _ := http.NewRequest(http.MethodGet, upstream.URL, nil)
	req.URL.Scheme = ""
	resp, err := a.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Fatalf("status %d", resp.StatusCode)
	}

	for _, st := range []*SharedTransport{a, b, other} {
		if err := st.Cleanup(); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := transports.References(a.key); ok {
		t.Fatal("the transport outlived its schools")
	}
}
