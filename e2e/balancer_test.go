package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// balancer is a load balancer that ends TLS in front of Caddy, as
// docs/scale-out.md offers: it answers https and forwards plain http to
// Caddy from its own address, 127.0.0.2, saying X-Forwarded-Proto: https
// (or Forwarded, RFC 7239, when forwarded is set).
func balancer(t *testing.T, caddyAddr string, forwarded bool) *httptest.Server {
	t.Helper()
	target := &url.URL{Scheme: "http", Host: caddyAddr}
	from := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			if forwarded {
				pr.Out.Header.Set("Forwarded", "for=192.0.2.60;proto=https;host="+pr.In.Host)
			} else {
				pr.SetXForwarded()
			}
		},
		Transport: &http.Transport{DialContext: from.DialContext},
	}
	lb := httptest.NewTLSServer(proxy)
	t.Cleanup(lb.Close)
	return lb
}

// Behind a load balancer that ends TLS, a platform's https schools are
// served on Caddy's plain listener by the scheme the balancer reports,
// which Caddy believes from the balancer's address alone (its
// trusted_proxies): the same header from any other address changes
// nothing, and a school of the other scheme is not answered. A site block
// on that listener serves its https issuer through the balancer too.
func TestBehindTLSBalancer(t *testing.T) {
	sch := startSchool(t)
	dir := t.TempDir()
	regDir := filepath.Join(dir, "registry")
	reg := openRegistryDir(t, regDir)
	port := freePort(t)
	caddyAddr := fmt.Sprintf("127.0.0.1:%d", port)
	lb, lbForwarded := balancer(t, caddyAddr, false), balancer(t, caddyAddr, true)
	lbPort := lb.Listener.Addr().(*net.TCPAddr).Port
	fwdPort := lbForwarded.Listener.Addr().(*net.TCPAddr).Port

	// The schools' origins are the balancer's: https on its port.
	school := func(name string, port int) string { return fmt.Sprintf("https://%s.test:%d", name, port) }
	putSchool(t, reg, school("a", lbPort), sch.URL, false, "")
	putSchool(t, reg, school("a", fwdPort), sch.URL, false, "")
	putSchool(t, reg, fmt.Sprintf("http://plain.test:%d", lbPort), sch.URL, false, "")
	site := school("site", lbPort)
	global := "\tservers {\n\t\ttrusted_proxies static 127.0.0.2/32\n\t}\n"
	startPlatform(t, dir, global, fmt.Sprintf(`http://site.test:%[1]d {
	school_gateway %[2]s {
		issuer %[3]s
		data %[4]s
	}
}

http://:%[1]d {
	school_platform {
		registry dir %[5]s
	}
}
`, port, sch.URL, site, filepath.Join(dir, "site"), regDir))

	// The balancer's certificate is httptest's; the client trusts it
	// whatever the name (platformClient).
	viaLB := platformClient
	discovery := func(c *http.Client, origin string, header ...string) response {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, origin+"/.well-known/oauth-authorization-server", nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			return response{}
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return response{resp.StatusCode, resp.Header, body}
	}
	issued := func(r response, origin string) bool {
		return r.status == 200 && jsonOf(t, r.body)["issuer"] == origin
	}

	lbClient := viaLB(lb.Listener.Addr().String())
	waitFor(t, "the platform's https school through the balancer", func() bool {
		return issued(discovery(lbClient, school("a", lbPort)), school("a", lbPort))
	})
	if r := discovery(viaLB(lbForwarded.Listener.Addr().String()), school("a", fwdPort)); !issued(r, school("a", fwdPort)) {
		t.Errorf("through a balancer saying Forwarded: proto=https: %d %s", r.status, r.body)
	}
	if r := discovery(lbClient, site); !issued(r, site) {
		t.Errorf("the site block through the balancer: %d %s", r.status, r.body)
	}
	// The school of the other scheme on that host is not the one asked.
	if r := discovery(lbClient, fmt.Sprintf("https://plain.test:%d", lbPort)); r.status != 404 {
		t.Errorf("an http school asked for over https: %d %s", r.status, r.body)
	}

	// From an address Caddy does not trust, the same headers change
	// nothing: the https school is not served on the plain listener.
	direct := platformClient(caddyAddr)
	host := fmt.Sprintf("http://a.test:%d", lbPort)
	for _, forged := range [][]string{{"X-Forwarded-Proto", "https"}, {"Forwarded", "proto=https"}, nil} {
		if r := discovery(direct, host, forged...); r.status != 404 || strings.Contains(string(r.body), "a.test") {
			t.Errorf("forged %v from an untrusted address: %d %s", forged, r.status, r.body)
		}
	}
	// And the http school there is still its own.
	if r := discovery(direct, fmt.Sprintf("http://plain.test:%d", lbPort), "X-Forwarded-Proto", "https"); !issued(r, fmt.Sprintf("http://plain.test:%d", lbPort)) {
		t.Errorf("the http school with a forged header: %d %s", r.status, r.body)
	}
}
