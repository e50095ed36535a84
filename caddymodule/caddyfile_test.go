package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/option"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/school"
)

func TestUnmarshalCaddyfileAllOptions(t *testing.T) {
	d := caddyfile.NewTestDispenser(`school_gateway http://127.0.0.1:9080 {
		issuer https://school.example
		data ./data/a
		session_url /api/session
		login_url https://school.example/login
		admin_prefix /admin/api
		catalog ./catalog.json refresh 5m
		language de
		vendor "Claude" {
			client_id claude
			redirect_uri https://claude.ai/api/mcp/auth_callback
		}
		vendor "Portal" {
			client_id portal
			redirect_uris http://127.0.0.1:8081/cb http://127.0.0.1:8081/cb2
			audience member
			scopes openid account:read
			client_secret s3cret
		}
		mcp_connections on
		metadata_documents {
			allow_hosts example.com agents.example
			allow_private_networks
		}
		rule GET /admin/api/reports/* operator analytics:read
		rule * /admin/api/danger deny
		rate_limit token 100/s 50
		rate_limit register 5/h
		code_ttl 30s
		access_token_ttl 15m
		refresh_token_ttl 48h
		refresh_grace 5s
		audit_retention 720h
		doctor_retention 48h
		dpop required nonce
		admin_openapi http://127.0.0.1:9080/openapi.json
		identity_assertion on
		identity_headers assertion
	}`)
	d.Next()
	var g Gateway
	if err := g.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	g.SetDefaults()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"upstream", g.Upstream, "http://127.0.0.1:9080"},
		{"issuer", g.Issuer, "https://school.example"},
		{"data", g.Data, "./data/a"},
		{"login_url", g.LoginURL, "https://school.example/login"},
		{"catalog", g.Catalog, "./catalog.json"},
		{"refresh", time.Duration(g.CatalogRefresh), 5 * time.Minute},
		{"language", g.Language, "de"},
		{"school's language", g.schoolConfig().Language, "de"},
		{"vendors", len(g.Vendors), 2},
		{"portal redirects", len(g.Vendors[1].RedirectURIs), 2},
		{"portal secret", g.Vendors[1].Secret, "s3cret"},
		{"mcp_connections", g.MCPConnections, true},
		{"allow hosts", strings.Join(g.MetadataDocuments.AllowHosts, ","), "example.com,agents.example"},
		{"private", g.MetadataDocuments.AllowPrivateNetworks, true},
		{"rules", len(g.Rules), 2},
		{"wildcard method", g.Rules[1].Method, ""},
		{"code_ttl", time.Duration(g.CodeTTL), 30 * time.Second},
		{"access", time.Duration(g.AccessTTL), 15 * time.Minute},
		{"refresh ttl", time.Duration(g.RefreshTTL), 48 * time.Hour},
		{"grace", time.Duration(g.RefreshGrace), 5 * time.Second},
		{"audit_retention", g.schoolConfig().AuditRetention.D(), 720 * time.Hour},
		{"doctor_retention", g.schoolConfig().DoctorRetention.D(), 48 * time.Hour},
		{"dpop", g.schoolConfig().DPoP, policy.DPoPRequired},
		{"dpop nonce", g.schoolConfig().DPoPNonce, true},
		{"admin_openapi", g.AdminOpenAPI, "http://127.0.0.1:9080/openapi.json"},
		{"identity_assertion", g.IdentityAssertion.Audience, "http://127.0.0.1:9080"},
		{"identity_headers", g.IdentityHeaders, school.IdentityHeadersAssertion},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if rules := g.Policy().Rules; !rules[1].Deny {
		t.Error("a deny rule must become a policy deny")
	}
	if l := g.RateLimits.Limits; l["token"] != (option.Rate{Events: 100, Period: option.Duration(time.Second), Burst: 50}) ||
		l["register"] != (option.Rate{Events: 5, Period: option.Duration(time.Hour), Burst: 5}) || len(l) != 2 {
		t.Errorf("rate limits %+v", l)
	}
	// What the server makes of them is authserver's
	// (TestRateLimitOptions).
}

// Every refusal names the option at fault.
func TestCaddyfileErrorsNameTheOption(t *testing.T) {
	tests := []struct{ body, want string }{
		{`school_gateway`, "upstream"},
		{`school_gateway http://a http://b`, "unexpected argument"},
		{"school_gateway http://127.0.0.1:9 {\n frobnicate\n}", `unknown option "frobnicate"`},
		{"school_gateway http://127.0.0.1:9 {\n issuer\n}", "issuer"},
		{"school_gateway http://127.0.0.1:9 {\n code_ttl -1s\n}", "code_ttl"},
		{"school_gateway http://127.0.0.1:9 {\n refresh_grace never\n}", "refresh_grace"},
		{"school_gateway http://127.0.0.1:9 {\n mcp_connections yes\n}", "mcp_connections"},
		{"school_gateway http://127.0.0.1:9 {\n catalog a.json every 5m\n}", "catalog"},
		{"school_gateway http://127.0.0.1:9 {\n catalog a.json refresh 1ms\n}", "refresh"},
		{"school_gateway http://127.0.0.1:9 {\n vendor X {\n colour red\n}\n}", `unknown option "colour"`},
		{"school_gateway http://127.0.0.1:9 {\n metadata_documents {\n allow_hosts\n}\n}", "allow_hosts"},
		{"school_gateway http://127.0.0.1:9 {\n metadata_documents {\n allow_private_networks yes\n}\n}", "allow_private_networks"},
		{"school_gateway http://127.0.0.1:9 {\n rule GET /admin/api\n}", "rule"},
		{"school_gateway http://127.0.0.1:9 {\n rate_limit tokens 5/s\n}", "unknown limit"},
		{"school_gateway http://127.0.0.1:9 {\n rate_limit token 5/day\n}", "rate_limit token"},
		{"school_gateway http://127.0.0.1:9 {\n rate_limit token 0/s\n}", "rate_limit token"},
		{"school_gateway http://127.0.0.1:9 {\n rate_limit token 5/s zero\n}", "burst"},
		{"school_gateway http://127.0.0.1:9 {\n rate_limit\n}", "rate_limit"},
		{"school_gateway http://127.0.0.1:9 {\n language de fr\n}", "language: expects exactly one value"},
		{"school_gateway http://127.0.0.1:9 {\n dpop\n}", "dpop"},
		{"school_gateway http://127.0.0.1:9 {\n dpop always\n}", "dpop"},
		{"school_gateway http://127.0.0.1:9 {\n dpop required nonces\n}", "dpop"},
		{"school_gateway http://127.0.0.1:9 {\n dpop required nonce extra\n}", "dpop"},
	}
	for _, tt := range tests {
		d := caddyfile.NewTestDispenser(tt.body)
		d.Next()
		var g Gateway
		err := g.UnmarshalCaddyfile(d)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want mention of %q", tt.body, err, tt.want)
		}
	}
}

func TestValidateNamesTheOption(t *testing.T) {
	base := func() Gateway {
		return Gateway{Options: school.Options{Upstream: "http://127.0.0.1:9080", Issuer: "https://school.example"}}
	}
	tests := []struct {
		name   string
		mutate func(*Gateway)
		want   string
	}{
		{"ok", func(*Gateway) {}, ""},
		{"upstream scheme", func(g *Gateway) { g.Upstream = "ftp://x" }, "upstream"},
		{"upstream path", func(g *Gateway) { g.Upstream = "http://x/app" }, "upstream"},
		{"issuer path", func(g *Gateway) { g.Issuer = "https://school.example/x" }, "issuer"},
		{"issuer query", func(g *Gateway) { g.Issuer = "https://school.example?x" }, "issuer"},
		{"session_url", func(g *Gateway) { g.SessionURL = "api/session" }, "session_url"},
		{"login_url", func(g *Gateway) { g.LoginURL = "//evil.example/login" }, "login_url"},
		{"admin_prefix", func(g *Gateway) { g.AdminPrefix = "admin" }, "admin_prefix"},
		{"language", func(g *Gateway) { g.Language = "fr" }, ""},
		{"audit_retention", func(g *Gateway) { g.AuditRetention = option.Duration(time.Hour) }, "audit_retention"},
		{"audit_retention negative", func(g *Gateway) { g.AuditRetention = option.Duration(-time.Hour) }, "audit_retention"},
		{"doctor_retention", func(g *Gateway) { g.DoctorRetention = option.Duration(time.Minute) }, "doctor_retention"},
		{"language unknown", func(g *Gateway) { g.Language = "nl" }, `language: "nl" is not one of the pages' languages (en, de, fr, it, es, pt)`},
		{"language with a region", func(g *Gateway) { g.Language = "de-CH" }, "language:"},
		{"language in capitals", func(g *Gateway) { g.Language = "DE" }, "language:"},
		{"dpop required", func(g *Gateway) { g.DPoP, g.DPoPNonce = policy.DPoPRequired, true }, ""},
		{"dpop nonce while off", func(g *Gateway) { g.DPoP, g.DPoPNonce = policy.DPoPOff, true }, "dpop_nonce"},
		{"vendor without redirect", func(g *Gateway) { g.Vendors = []authserver.VendorClient{{Name: "V", ClientID: "v"}} }, "redirect_uri"},
		{"vendor bad client id", func(g *Gateway) {
			g.Vendors = []authserver.VendorClient{{Name: "V", ClientID: "a b", RedirectURIs: []string{"https://v.example/cb"}}}
		}, "client_id"},
		{"vendor duplicate", func(g *Gateway) {
			v := authserver.VendorClient{Name: "V", ClientID: "v", RedirectURIs: []string{"https://v.example/cb"}}
			g.Vendors = []authserver.VendorClient{v, v}
		}, "used by another vendor"},
		{"vendor fragment", func(g *Gateway) {
			g.Vendors = []authserver.VendorClient{{Name: "V", ClientID: "v", RedirectURIs: []string{"https://v.example/cb#x"}}}
		}, "redirect_uri"},
		{"vendor audience", func(g *Gateway) {
			g.Vendors = []authserver.VendorClient{{Name: "V", ClientID: "v", Audience: "admin", RedirectURIs: []string{"https://v.example/cb"}}}
		}, "audience"},
		{"vendor scope", func(g *Gateway) {
			g.Vendors = []authserver.VendorClient{{Name: "V", ClientID: "v", Scopes: []string{"all"}, RedirectURIs: []string{"https://v.example/cb"}}}
		}, `unknown scope "all"`},
		{"vendor offline_access", func(g *Gateway) {
			g.Vendors = []authserver.VendorClient{{Name: "V", ClientID: "v", Scopes: []string{"openid", "offline_access"}, RedirectURIs: []string{"https://v.example/cb"}}}
		}, "every client may request it"},
		{"rule offline_access", func(g *Gateway) {
			g.Rules = []school.Rule{{Path: "/admin/api/x", Audience: "operator", Scopes: []string{"offline_access"}}}
		}, "no request needs it"},
		{"rule audience", func(g *Gateway) { g.Rules = []school.Rule{{Path: "/admin/api/x", Audience: "root"}} }, "audience"},
		{"rule scope", func(g *Gateway) {
			g.Rules = []school.Rule{{Path: "/admin/api/x", Audience: "operator", Scopes: []string{"x:y"}}}
		}, "x:y"},
		{"rule outside prefix", func(g *Gateway) { g.Rules = []school.Rule{{Path: "/other", Audience: "operator"}} }, "admin_prefix"},
	}
	for _, tt := range tests {
		g := base()
		tt.mutate(&g)
		g.SetDefaults()
		err := g.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want mention of %q", tt.name, err, tt.want)
		}
	}
}

// The directive expands into school_gateway + the shared reverse_proxy
// (schoolgate_upstream), takes the
// issuer from the site address, and needs no global order option.
func TestDirectiveExpansion(t *testing.T) {
	tests := []struct{ site, option, issuer string }{
		{"http://127.0.0.1:8080", "", "http://127.0.0.1:8080"},
		{"school.example", "", "https://school.example"},
		{"https://school.example:8443", "", "https://school.example:8443"},
		{"http://school.example", "", "http://school.example"},
		// The issuer's one spelling, whether from the site address or
		// from the issuer option.
		{"School.Example", "", "https://school.example"},
		{"https://School.Example:443", "", "https://school.example"},
		{"School.Example:443", "", "https://school.example"},
		{"http://School.Example:80", "", "http://school.example"},
		{"School.Example:0443", "", "https://school.example"},
		{"[::1]:8443", "", "https://[::1]:8443"},
		{"[::1]", "", "https://[::1]"},
		{"school.example", "HTTPS://School.Example:443/", "https://school.example"},
		{"school.example", "https://school.example/", "https://school.example"},
		{"school.example", "https://school.example:443", "https://school.example"},
		{"school.example", "https://SCHOOL.EXAMPLE", "https://school.example"},
	}
	for _, tt := range tests {
		cfg := tt.site + " {\n\tschool_gateway http://127.0.0.1:9080\n}\n"
		if tt.option != "" {
			cfg = tt.site + " {\n\tschool_gateway http://127.0.0.1:9080 {\n\t\tissuer " + tt.option + "\n\t}\n}\n"
		}
		raw, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg), nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.site, err)
		}
		_ = warnings
		s := string(raw)
		for _, want := range []string{`"handler":"school_gateway"`, `"handler":"schoolgate_upstream"`, `"proxy":{`,
			`"issuer":"` + tt.issuer + `"`, `"max_idle_conns_per_host":128`} {
			if !strings.Contains(s, want) {
				t.Errorf("%s: adapted config lacks %s:\n%s", tt.site, want, s)
			}
		}
		var parsed map[string]any
		if err := json.Unmarshal(raw, &parsed); err != nil {
			t.Fatal(err)
		}
	}
	// A wildcard site cannot name one issuer: the operator must set it.
	_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte("*.example.com {\n\tschool_gateway http://127.0.0.1:9080\n}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "issuer") {
		t.Errorf("wildcard site: %v", err)
	}
}
