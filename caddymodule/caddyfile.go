package caddymodule

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/option"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/school"
)

func init() {
	httpcaddyfile.RegisterDirective("school_gateway", parseSchoolGateway)
	// Before reverse_proxy and the other terminal handlers, so a
	// Caddyfile needs no global order option.
	httpcaddyfile.RegisterDirectiveOrder("school_gateway", httpcaddyfile.Before, "reverse_proxy")
}

// parseSchoolGateway expands
//
//	school_gateway <upstream> { ... }
//
// into a route of two handlers: the school_gateway handler, then Caddy's
// own reverse_proxy to the upstream, shared by the schools that configure
// it alike (schoolgate_upstream). A power user can write the same two
// handlers by hand, with reverse_proxy itself as the second.
func parseSchoolGateway(h httpcaddyfile.Helper) ([]httpcaddyfile.ConfigValue, error) {
	h.Next() // directive name
	g := new(Gateway)
	if err := g.UnmarshalCaddyfile(h.Dispenser); err != nil {
		return nil, err
	}
	if g.Issuer == "" {
		issuer, err := siteOrigin(h)
		if err != nil {
			return nil, h.Errf("issuer: %v; set it explicitly", err)
		}
		g.Issuer = issuer
	}
	g.SetDefaults()
	if err := g.Validate(); err != nil {
		return nil, h.Err(err.Error())
	}
	proxy, err := upstreamProxy(g.Upstream, g.upstreamBlock, g.LegacyTimeout())
	if err != nil {
		return nil, h.Errf("upstream: %v", err)
	}
	// One route with both handlers chains them (the gateway's next is the
	// proxy) without a subroute, whose route list Caddy compiles again on
	// every request.
	raw, err := json.Marshal(proxy)
	if err != nil {
		return nil, h.Errf("upstream: %v", err)
	}
	route := caddyhttp.Route{HandlersRaw: []json.RawMessage{
		caddyconfig.JSONModuleObject(g, "handler", "school_gateway", nil),
		caddyconfig.JSONModuleObject(UpstreamProxy{Proxy: raw}, "handler", "schoolgate_upstream", nil),
	}}
	return []httpcaddyfile.ConfigValue{{Class: "route", Value: route}}, nil
}

// upstreamProxy configures reverse_proxy for the legacy server. Without
// an upstream block it proxies to the one upstream with the default
// transport; with one, the block is reverse_proxy's own. Either way its
// transport waits at most timeout for an answer, unless the block says
// otherwise.
func upstreamProxy(upstream string, block caddyfile.Segment, timeout time.Duration) (*reverseproxy.Handler, error) {
	def, err := defaultUpstreamProxy(upstream, timeout)
	if err != nil || len(block) == 0 {
		return def, err
	}
	return blockUpstreamProxy(upstream, block, def.TransportRaw, timeout)
}

// blockUpstreamProxy hands an upstream block to reverse_proxy's own
// unmarshaler, the way forward_auth does: "upstream [<to>...] { ... }"
// reads as "reverse_proxy <upstream> [<to>...] { ... }", so every
// reverse_proxy option (more upstreams, lb_policy, health checks,
// transport, header_up) is the operator's. The default transport applies
// unless the block names one, which gets the legacy timeout unless it
// sets its own.
func blockUpstreamProxy(upstream string, block caddyfile.Segment, defaultTransport json.RawMessage, timeout time.Duration) (*reverseproxy.Handler, error) {
	first := block[0]
	arg := first
	arg.Text = upstream
	tokens := append(caddyfile.Segment{first, arg}, block[1:]...)
	rp := new(reverseproxy.Handler)
	if err := rp.UnmarshalCaddyfile(caddyfile.NewDispenser(tokens)); err != nil {
		return nil, err
	}
	if !namesOption(block, "transport") {
		rp.TransportRaw = defaultTransport
		return rp, nil
	}
	var err error
	rp.TransportRaw, err = withLegacyTimeout(rp.TransportRaw, timeout)
	return rp, err
}

// namesOption reports whether a block sets opt at its first level.
func namesOption(block caddyfile.Segment, opt string) bool {
	d := caddyfile.NewDispenser(block)
	d.Next()
	for d.NextBlock(0) {
		if d.Val() == opt {
			return true
		}
	}
	return false
}

// defaultUpstreamProxy configures reverse_proxy for one legacy server
// with a keep-alive pool big enough not to churn connections under load,
// waiting at most timeout for an answer (the school's legacy_timeout).
func defaultUpstreamProxy(upstream string, timeout time.Duration) (*reverseproxy.Handler, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	transport := map[string]any{
		"protocol":                "http",
		"dial_timeout":            caddy.Duration(5 * time.Second),
		"response_header_timeout": caddy.Duration(timeout),
		"keep_alive": map[string]any{
			"max_idle_conns_per_host": 128,
		},
	}
	if u.Scheme == "https" {
		transport["tls"] = map[string]any{"server_name": u.Hostname()}
	}
	raw, err := json.Marshal(transport)
	if err != nil {
		return nil, err
	}
	return &reverseproxy.Handler{
		TransportRaw: raw,
		Upstreams:    reverseproxy.UpstreamPool{{Dial: hostPort(u.Hostname(), port)}},
	}, nil
}

func hostPort(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// siteOrigin derives the issuer from the enclosing site block's first
// address, in its one spelling. httpcaddyfile does not export the block
// to directives, so it is read (never written) by reflection; a Caddyfile
// can always set issuer explicitly instead.
func siteOrigin(h httpcaddyfile.Helper) (string, error) {
	keys := reflect.ValueOf(h).FieldByName("parentBlock").FieldByName("Keys")
	if !keys.IsValid() || keys.Len() == 0 {
		return "", fmt.Errorf("the site address is not available")
	}
	text := keys.Index(0).FieldByName("Text")
	if !text.IsValid() {
		return "", fmt.Errorf("the site address is not available")
	}
	addr, err := httpcaddyfile.ParseAddress(text.String())
	if err != nil {
		return "", err
	}
	if addr.Host == "" || strings.ContainsAny(addr.Host, "*{") {
		return "", fmt.Errorf("the site address %q names no single host", addr.Original)
	}
	scheme := addr.Scheme
	if scheme == "" {
		scheme = "https"
		if addr.Port == "80" {
			scheme = "http"
		}
	}
	host := addr.Host
	if addr.Port != "" {
		host = net.JoinHostPort(host, addr.Port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	// The issuer's one spelling: School.Example:443 is https://school.example.
	return policy.ParseOrigin(scheme + "://" + host)
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens:
//
//	school_gateway <upstream> {
//		issuer        <origin>
//		data          <dir>
//		session_url   <path|url>
//		login_url     <path|url>
//		admin_prefix  <path>
//		catalog       <file|url> [refresh <duration>]
//		admin_openapi <file|url>
//		vendor <name> {
//			client_id     <id>
//			redirect_uri  <uri...>
//			audience      member|operator
//			scopes        <scope...>
//			client_secret <secret>
//		}
//		mcp_connections on|off
//		metadata_documents {
//			allow_hosts <host...>|*
//			allow_private_networks
//		}
//		rule <method|*> <path> member|operator|deny [<scope...>]
//		rate_limit off | <name> <events>/<s|m|h> [<burst>]
//		weight <n>
//		budget {
//			requests           <events>/<s|m|h> [<burst>]
//			mcp_anonymous      <events>/<s|m|h> [<burst>]
//			legacy_concurrency <n>
//			legacy_timeout     <duration>
//		}
//		identity_assertion on|off [{
//			audience <string>
//		}]
//		identity_headers all|assertion
//		dpop off|allowed|required [nonce]
//		upstream [<more upstreams...>] {
//			<reverse_proxy options: lb_policy, health_uri, transport, header_up, ...>
//		}
//		code_ttl | access_token_ttl | refresh_token_ttl | refresh_grace | audit_retention | doctor_retention <duration>
//	}
func (g *Gateway) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	if !d.NextArg() {
		return d.Err("school_gateway: the upstream (legacy school server URL) is required, e.g. school_gateway http://127.0.0.1:9080")
	}
	g.Upstream = d.Val()
	if d.NextArg() {
		return d.Errf("school_gateway: unexpected argument %q; options go in a block", d.Val())
	}
	for d.NextBlock(0) {
		if err := g.unmarshalOption(d); err != nil {
			return err
		}
	}
	return nil
}

func (g *Gateway) unmarshalOption(d *caddyfile.Dispenser) error {
	opt := d.Val()
	single := map[string]*string{"issuer": &g.Issuer, "data": &g.Data, "session_url": &g.SessionURL,
		"login_url": &g.LoginURL, "admin_prefix": &g.AdminPrefix, "language": &g.Language}
	if dst, ok := single[opt]; ok {
		return oneArg(d, opt, dst)
	}
	durations := map[string]*option.Duration{"code_ttl": &g.CodeTTL, "access_token_ttl": &g.AccessTTL,
		"refresh_token_ttl": &g.RefreshTTL, "audit_retention": &g.AuditRetention,
		"doctor_retention": &g.DoctorRetention}
	if dst, ok := durations[opt]; ok {
		return durationArg(d, opt, dst)
	}
	switch opt {
	case "refresh_grace":
		return g.unmarshalRefreshGrace(d)
	case "catalog":
		return g.unmarshalCatalog(d)
	case "admin_openapi":
		return oneArg(d, opt, &g.AdminOpenAPI)
	case "rate_limit":
		return g.unmarshalRateLimit(d)
	case "weight":
		return g.unmarshalWeight(d)
	case "budget":
		return g.unmarshalBudget(d)
	case "vendor":
		return g.unmarshalVendor(d)
	case "mcp_connections":
		return onOff(d, opt, &g.MCPConnections)
	case "metadata_documents":
		return g.unmarshalMetadataDocuments(d)
	case "rule":
		return g.unmarshalRule(d)
	case "identity_assertion":
		return g.unmarshalIdentityAssertion(d)
	case "identity_headers":
		return oneArg(d, opt, &g.IdentityHeaders)
	case "dpop":
		return g.unmarshalDPoP(d)
	case "store":
		return g.unmarshalStore(d)
	case "upstream":
		if g.upstreamBlock != nil {
			return d.Err("upstream: only one upstream block")
		}
		g.upstreamBlock = d.NextSegment()
		return nil
	}
	return d.Errf("school_gateway: unknown option %q", opt)
}

// unmarshalRefreshGrace reads refresh_grace <duration>, or 0 (or off):
// no window, any second use of a refresh token is a replay.
func (g *Gateway) unmarshalRefreshGrace(d *caddyfile.Dispenser) error {
	var s string
	if err := oneArg(d, "refresh_grace", &s); err != nil {
		return err
	}
	if s == "0" || s == "off" {
		g.NoRefreshGrace = true
		return nil
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil || dur <= 0 {
		return d.Errf("refresh_grace: %q is not a positive duration, 0 or off", s)
	}
	g.RefreshGrace = option.Duration(dur)
	return nil
}

func oneArg(d *caddyfile.Dispenser, opt string, dst *string) error {
	args := d.RemainingArgs()
	if len(args) != 1 {
		return d.Errf("%s: expects exactly one value", opt)
	}
	*dst = args[0]
	return nil
}

// durationArg reads a positive duration into an option's (or Caddy's)
// duration type.
func durationArg[D ~int64](d *caddyfile.Dispenser, opt string, dst *D) error {
	var s string
	if err := oneArg(d, opt, &s); err != nil {
		return err
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil || dur <= 0 {
		return d.Errf("%s: %q is not a positive duration", opt, s)
	}
	*dst = D(dur)
	return nil
}

func onOff(d *caddyfile.Dispenser, opt string, dst *bool) error {
	var s string
	if err := oneArg(d, opt, &s); err != nil {
		return err
	}
	switch s {
	case "on":
		*dst = true
	case "off":
		*dst = false
	default:
		return d.Errf("%s: expects on or off, not %q", opt, s)
	}
	return nil
}

func (g *Gateway) unmarshalCatalog(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	switch {
	case len(args) == 1:
	case len(args) == 3 && args[1] == "refresh":
		dur, err := caddy.ParseDuration(args[2])
		if err != nil || dur < time.Second {
			return d.Errf("catalog: refresh %q must be a duration of at least 1s", args[2])
		}
		g.CatalogRefresh = option.Duration(dur)
	default:
		return d.Err("catalog: expects <file|url> [refresh <duration>]")
	}
	g.Catalog = args[0]
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		if d.Val() != "refresh" {
			return d.Errf("catalog: unknown option %q", d.Val())
		}
		if err := durationArg(d, "catalog refresh", &g.CatalogRefresh); err != nil {
			return err
		}
	}
	return nil
}

func (g *Gateway) unmarshalVendor(d *caddyfile.Dispenser) error {
	var v authserver.VendorClient
	if err := oneArg(d, "vendor", &v.Name); err != nil {
		return err
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		var err error
		switch opt {
		case "client_id":
			err = oneArg(d, "vendor "+v.Name+" client_id", &v.ClientID)
		case "client_secret":
			err = oneArg(d, "vendor "+v.Name+" client_secret", &v.Secret)
		case "audience":
			err = oneArg(d, "vendor "+v.Name+" audience", &v.Audience)
		case "redirect_uri", "redirect_uris":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return d.Errf("vendor %q: %s expects at least one URI", v.Name, opt)
			}
			v.RedirectURIs = append(v.RedirectURIs, args...)
		case "scopes", "scope":
			v.Scopes = append(v.Scopes, d.RemainingArgs()...)
		default:
			return d.Errf("vendor %q: unknown option %q", v.Name, opt)
		}
		if err != nil {
			return err
		}
	}
	g.Vendors = append(g.Vendors, v)
	return nil
}

func (g *Gateway) unmarshalMetadataDocuments(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.Err("metadata_documents: options go in a block")
	}
	m := &authserver.MetadataDocumentsConfig{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "allow_hosts":
			hosts := d.RemainingArgs()
			if len(hosts) == 0 {
				return d.Err("metadata_documents allow_hosts: expects * or a list of hosts")
			}
			m.AllowHosts = append(m.AllowHosts, hosts...)
		case "allow_private_networks":
			if d.NextArg() {
				return d.Err("metadata_documents allow_private_networks: takes no value")
			}
			m.AllowPrivateNetworks = true
		default:
			return d.Errf("metadata_documents: unknown option %q", d.Val())
		}
	}
	g.MetadataDocuments = m
	return nil
}

func (g *Gateway) unmarshalRule(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) < 3 {
		return d.Err("rule: expects <method|*> <path> member|operator|deny [<scope...>]")
	}
	r := school.Rule{Method: strings.ToUpper(args[0]), Path: args[1], Audience: args[2], Scopes: args[3:]}
	if r.Method == "*" {
		r.Method = ""
	}
	g.Rules = append(g.Rules, r)
	return nil
}

var _ caddyfile.Unmarshaler = (*Gateway)(nil)
