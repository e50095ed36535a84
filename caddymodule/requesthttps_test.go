package caddymodule

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	platformcore "github.com/schoolgate/schoolgate/platform"
)

func TestRequestHTTPS(t *testing.T) {
	// What the platform reads a request's scheme by: Caddy's judgement
	// of its proxy, and the proxy's header if it is trusted.
	requestHTTPS := func(r *http.Request) bool { return platformcore.HTTPS(r, trustedProxy(r)) }
	tests := []struct {
		name    string
		tls     bool
		trusted bool
		header  http.Header
		want    bool
	}{
		{"plain, nothing said", false, true, nil, false},
		{"tls, nothing said", true, true, nil, true},
		{"trusted X-Forwarded-Proto https", false, true, http.Header{"X-Forwarded-Proto": {"https"}}, true},
		{"trusted X-Forwarded-Proto in capitals", false, true, http.Header{"X-Forwarded-Proto": {"HTTPS"}}, true},
		{"trusted X-Forwarded-Proto http over tls", true, true, http.Header{"X-Forwarded-Proto": {"http"}}, false},
		{"untrusted X-Forwarded-Proto https", false, false, http.Header{"X-Forwarded-Proto": {"https"}}, false},
		{"untrusted Forwarded https", false, false, http.Header{"Forwarded": {"for=192.0.2.1;proto=https"}}, false},
		{"untrusted X-Forwarded-Proto http over tls", true, false, http.Header{"X-Forwarded-Proto": {"http"}}, true},
		{"trusted Forwarded", false, true, http.Header{"Forwarded": {"for=192.0.2.1;proto=https;host=school.example"}}, true},
		{"trusted Forwarded, quoted", false, true, http.Header{"Forwarded": {`for="[2001:db8::1]:4711";Proto="https"`}}, true},
		{"Forwarded's last element is the nearest proxy's", false, true,
			http.Header{"Forwarded": {"for=198.51.100.7;proto=https, for=10.0.0.5;proto=http"}}, false},
		{"a client's own element before the proxy's is not believed", false, true,
			http.Header{"Forwarded": {"proto=http", "for=198.51.100.7;proto=https"}}, true},
		{"a comma inside a quoted value", false, true, http.Header{"Forwarded": {`for="a,b";proto=https`}}, true},
		{"Forwarded without proto falls back to X-Forwarded-Proto", false, true,
			http.Header{"Forwarded": {"for=192.0.2.1"}, "X-Forwarded-Proto": {"https"}}, true},
		{"Forwarded before X-Forwarded-Proto", false, true,
			http.Header{"Forwarded": {"proto=http"}, "X-Forwarded-Proto": {"https"}}, false},
		{"X-Forwarded-Proto list: the last", false, true, http.Header{"X-Forwarded-Proto": {"http, https"}}, true},
		{"X-Forwarded-Proto lines: the last", false, true, http.Header{"X-Forwarded-Proto": {"https", "http"}}, false},
		{"an unknown scheme is nothing said", true, true, http.Header{"X-Forwarded-Proto": {"wss"}}, true},
		{"an empty value is nothing said", false, true, http.Header{"X-Forwarded-Proto": {""}}, false},
		{"a Forwarded proto that is no scheme leaves X-Forwarded-Proto", false, true,
			http.Header{"Forwarded": {"proto=gopher"}, "X-Forwarded-Proto": {"https"}}, true},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "http://school.example/", nil)
		if tt.tls {
			r.TLS = &tls.ConnectionState{}
		}
		for k, v := range tt.header {
			r.Header[k] = v
		}
		vars := map[string]any{caddyhttp.TrustedProxyVarKey: tt.trusted}
		r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
		if got := requestHTTPS(r); got != tt.want {
			t.Errorf("%s: https %v, want %v", tt.name, got, tt.want)
		}
	}
	// A request outside a Caddy server (no vars): the connection's own.
	r := httptest.NewRequest(http.MethodGet, "http://school.example/", nil)
	r.Header.Set("X-Forwarded-Proto", "https")
	if requestHTTPS(r) {
		t.Error("a request with no trust decided believed its header")
	}
}
