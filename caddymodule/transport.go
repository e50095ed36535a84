package caddymodule

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
)

func init() {
	caddy.RegisterModule(SharedTransport{})
}

// SharedTransport is reverse_proxy's HTTP transport, shared by every school
// that configures it alike: a thousand schools in front of one legacy
// server keep one connection pool to it, not a thousand, and a reload
// keeps the pool (and its warm connections) for the config that follows.
// Its options are those of the http transport.
type SharedTransport struct {
	reverseproxy.HTTPTransport

	key    string
	shared *reverseproxy.HTTPTransport
}

// transports holds the provisioned transports by their configuration.
var transports = caddy.NewUsagePool()

type pooledTransport struct{ *reverseproxy.HTTPTransport }

// Destruct closes the idle connections once no config uses the transport.
func (p pooledTransport) Destruct() error { return p.Cleanup() }

// CaddyModule returns the Caddy module information.
func (SharedTransport) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.reverse_proxy.transport.schoolgate",
		New: func() caddy.Module { return new(SharedTransport) },
	}
}

// Provision finds the transport configured alike, or provisions it.
func (t *SharedTransport) Provision(ctx caddy.Context) error {
	raw, err := json.Marshal(t.HTTPTransport)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(raw)
	t.key = hex.EncodeToString(sum[:])
	v, _, err := transports.LoadOrNew(t.key, func() (caddy.Destructor, error) {
		ht := new(reverseproxy.HTTPTransport)
		if err := json.Unmarshal(raw, ht); err != nil {
			return nil, err
		}
		if err := ht.Provision(ctx); err != nil {
			return nil, err
		}
		return pooledTransport{ht}, nil
	})
	if err != nil {
		return err
	}
	t.shared = v.(pooledTransport).HTTPTransport
	return nil
}

// RoundTrip sends the request on the shared transport.
func (t *SharedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.shared.RoundTrip(r)
}

// Cleanup lets go of the shared transport; the last config to use it
// closes its idle connections.
func (t *SharedTransport) Cleanup() error {
	if t.shared == nil {
		return nil
	}
	_, err := transports.Delete(t.key)
	return err
}

var (
	_ http.RoundTripper         = (*SharedTransport)(nil)
	_ caddy.Provisioner         = (*SharedTransport)(nil)
	_ caddy.CleanerUpper        = (*SharedTransport)(nil)
	_ reverseproxy.TLSTransport = (*SharedTransport)(nil)
)
