package authserver

import (
	"testing"

	"github.com/schoolgate/schoolgate/store"
)

// Loopback redirect URIs match on any port (RFC 8252 §7.3) and on nothing
// else: the host, path and query are the registered ones, and the URI is
// well-formed.
func TestLoopbackRedirectMatchIsStrictButForThePort(t *testing.T) {
	c := &store.Client{RedirectURIs: []string{"http://127.0.0.1/cb", "http://[::1]:8080/cb?x=1", "https://app.example/cb"}}
	for uri, want := range map[string]bool{
		"http://127.0.0.1/cb":           true,
		"http://127.0.0.1:51234/cb":     true,
		"http://127.0.0.1:65535/cb":     true,
		"http://[::1]:1/cb?x=1":         true,
		"https://app.example/cb":        true,
		"http://127.0.0.1:51234/cb?":    false,
		"http://127.0.0.1:51234/cb#":    false,
		"http://127.0.0.1:51234/cb#x":   false,
		"http://127.0.0.1:/cb":          true, // an empty port is no port, as url.Parse reads it
		"http://127.0.0.1:0/cb":         false,
		"http://127.0.0.1:65536/cb":     false,
		"http://127.0.0.1:080/cb":       false,
		"http://127.0.0.1:51234/cb/":    false,
		"http://127.0.0.1:51234/CB":     false,
		"http://localhost:51234/cb":     false,
		"http://[::1]:1/cb":             false,
		"http://[::1]:1/cb?x=2":         false,
		"http://u@127.0.0.1:51234/cb":   false,
		"https://app.example:8443/cb":   false,
		"https://127.0.0.1:51234/cb":    false,
		"http://127.0.0.1.evil/cb":      false,
		"http://127.0.0.1:51234/cb?a=b": false,
	} {
		if got := MatchRedirect(c, uri); got != want {
			t.Errorf("MatchRedirect(%q) = %v, want %v", uri, got, want)
		}
	}
}
