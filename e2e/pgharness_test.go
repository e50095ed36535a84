package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// pgKeySecret seals the signing keys of the tests' PostgreSQL sites.
const pgKeySecret = "e2e-key-secret"

// pgStore is the store directive of a site kept in the database at dsn.
func pgStore(dsn string) string {
	return fmt.Sprintf("store postgres %q {\n\t\t\tkey_secret %s\n\t\t}", dsn, pgKeySecret)
}

// pgSiteBlock is siteBlock for a site kept in PostgreSQL that listens on
// port and whose issuer is issuerPort's origin: instances of one school
// behind a load balancer listen apart and share the issuer.
func pgSiteBlock(port, issuerPort int, upstream, dsn, extra string) string {
	block := siteBlock(port, upstream, "UNUSED", extra)
	block = strings.Replace(block, "data UNUSED", pgStore(dsn), 1)
	return strings.Replace(block, fmt.Sprintf("issuer http://127.0.0.1:%d", port),
		fmt.Sprintf("issuer http://127.0.0.1:%d", issuerPort), 1)
}

// storeKinds are the stores the load and durability tests run on.
var storeKinds = []string{"bbolt", "postgres"}

// siteBlockOn is siteBlock with the site kept in the kind of store named:
// a bbolt file under dataDir, or a fresh PostgreSQL database.
func siteBlockOn(t *testing.T, kind string, port int, upstream, dataDir, extra string) string {
	if kind == "postgres" {
		return pgSiteBlock(port, port, upstream, pgcluster.Database(t), extra)
	}
	return siteBlock(port, upstream, dataDir, extra)
}

// startBalancer runs a plain Caddy (no schoolgate directive) on port that
// spreads requests over the backends round robin, keeping the Host.
func startBalancer(t *testing.T, dir string, port int, backends ...string) *gateway {
	t.Helper()
	site := fmt.Sprintf("http://127.0.0.1:%d {\n\treverse_proxy %s {\n\t\tlb_policy round_robin\n\t}\n}\n",
		port, strings.Join(backends, " "))
	g := &gateway{t: t, Dir: dir, AdminAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		config: filepath.Join(dir, "Caddyfile"), URL: fmt.Sprintf("http://127.0.0.1:%d", port)}
	g.write(site)
	g.proc = start(t, caddyBin, "run", "--config", g.config, "--adapter", "caddyfile")
	waitHTTP(t, g.URL+"/.well-known/oauth-authorization-server")
	return g
}

// toHost sends every request to addr whatever its URL says, Host header
// included as the URL had it: a client of the load balancer's origin
// talking to one instance behind it.
type toHost struct {
	addr string
	next http.RoundTripper
}

func (h toHost) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = r.URL.Host
	r.URL.Host = h.addr
	return h.next.RoundTrip(r)
}

// at is o speaking to the instance at addr (host:port) directly, with the
// same session, client and resource.
func (o *oauthLoad) at(addr string) *oauthLoad {
	c := *o.http
	c.Transport = toHost{addr: addr, next: o.http.Transport}
	copy := *o
	copy.http = &c
	return &copy
}
