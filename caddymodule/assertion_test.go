package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/schoolgate/schoolgate/school"
)

func TestIdentityAssertionCaddyfile(t *testing.T) {
	tests := []struct {
		name, upstream, options string
		want                    *school.IdentityAssertion // after SetDefaults
	}{
		{"off by default", "http://127.0.0.1:9080", "", nil},
		{"off", "http://127.0.0.1:9080", "identity_assertion off", nil},
		{"on: the upstream's origin", "http://127.0.0.1:9080", "identity_assertion on",
			&school.IdentityAssertion{Audience: "http://127.0.0.1:9080"}},
		{"on: origin without trailing slash, default port or upper case", "HTTPS://Legacy.Internal:443/", "identity_assertion on",
			&school.IdentityAssertion{Audience: "https://legacy.internal"}},
		{"on with an audience", "http://127.0.0.1:9080", "identity_assertion on {\n audience urn:school:legacy\n}",
			&school.IdentityAssertion{Audience: "urn:school:legacy"}},
		{"the last line wins", "http://127.0.0.1:9080", "identity_assertion on\n identity_assertion off", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := caddyfile.NewTestDispenser("school_gateway " + tt.upstream + " {\n" + tt.options + "\n}")
			d.Next()
			g := Gateway{Options: school.Options{Issuer: "https://school.example"}}
			if err := g.UnmarshalCaddyfile(d); err != nil {
				t.Fatal(err)
			}
			g.SetDefaults()
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == nil && g.IdentityAssertion != nil:
				t.Errorf("identity_assertion = %+v, want off", *g.IdentityAssertion)
			case tt.want != nil && (g.IdentityAssertion == nil || *g.IdentityAssertion != *tt.want):
				t.Errorf("identity_assertion = %+v, want %+v", g.IdentityAssertion, *tt.want)
			}
		})
	}
}

func TestIdentityAssertionCaddyfileErrors(t *testing.T) {
	tests := []struct{ options, want string }{
		{"identity_assertion", "identity_assertion: expects exactly one value"},
		{"identity_assertion yes", "identity_assertion: expects on or off"},
		{"identity_assertion on off", "identity_assertion: expects exactly one value"},
		{"identity_assertion off {\n audience x\n}", "identity_assertion off: takes no block"},
		{"identity_assertion on {\n audience\n}", "identity_assertion audience: expects exactly one value"},
		{"identity_assertion on {\n audience a b\n}", "identity_assertion audience: expects exactly one value"},
		{"identity_assertion on {\n audience a\n audience b\n}", "identity_assertion audience: given twice"},
		{"identity_assertion on {\n issuer x\n}", `identity_assertion: unknown option "issuer"`},
	}
	for _, tt := range tests {
		d := caddyfile.NewTestDispenser("school_gateway http://127.0.0.1:9 {\n" + tt.options + "\n}")
		d.Next()
		var g Gateway
		err := g.UnmarshalCaddyfile(d)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.options, err, tt.want)
		}
	}
}

func TestIdentityAssertionValidate(t *testing.T) {
	for _, aud := range []string{" padded", "tab\t", "line\nbreak", "nul\x00"} {
		g := Gateway{Options: school.Options{Upstream: "http://127.0.0.1:9080", Issuer: "https://school.example", IdentityAssertion: &school.IdentityAssertion{Audience: aud}}}
		g.SetDefaults()
		if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "identity_assertion audience") {
			t.Errorf("audience %q: %v", aud, err)
		}
	}
	// A bad upstream has no origin to default to: the upstream is named.
	g := Gateway{Options: school.Options{Upstream: "http://127.0.0.1:9080/app", Issuer: "https://school.example", IdentityAssertion: &school.IdentityAssertion{}}}
	g.SetDefaults()
	if err := g.Validate(); err == nil || !strings.HasPrefix(err.Error(), "upstream") {
		t.Errorf("bad upstream: %v", err)
	}
}

// The adapted JSON names the audience, so `caddy adapt` shows what will
// be signed.
func TestIdentityAssertionAdaptedJSON(t *testing.T) {
	for options, want := range map[string]string{
		"":                      "",
		"identity_assertion on": `"identity_assertion":{"audience":"http://127.0.0.1:9080"}`,
		"identity_assertion on {\n\t\taudience https://legacy.example\n\t}": `"identity_assertion":{"audience":"https://legacy.example"}`,
	} {
		cfg := "http://127.0.0.1:8080 {\n\tschool_gateway http://127.0.0.1:9080 {\n\t" + options + "\n\t}\n}\n"
		raw, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg), nil)
		if err != nil {
			t.Fatalf("%q: %v", options, err)
		}
		if got := strings.Contains(string(raw), `"identity_assertion"`); got != (want != "") || !strings.Contains(string(raw), want) {
			t.Errorf("%q: adapted config %s, want %s", options, raw, want)
		}
	}
}

// identity_headers chooses what the school forwards; assertion needs the
// assertion on, and the error names both options.
func TestIdentityHeadersOption(t *testing.T) {
	tests := []struct {
		options, want string // want: an error, or "" for none
		only          bool
	}{
		{"", "", false},
		{"identity_headers all", "", false},
		{"identity_assertion on\n identity_headers all", "", false},
		{"identity_assertion on\n identity_headers assertion", "", true},
		{"identity_headers assertion", "identity_headers assertion: requires identity_assertion on", false},
		{"identity_assertion off\n identity_headers assertion", "identity_headers assertion: requires identity_assertion on", false},
		{"identity_assertion on\n identity_headers none", `identity_headers: "none" must be all or assertion`, false},
		{"identity_headers", "identity_headers: expects exactly one value", false},
		{"identity_headers all assertion", "identity_headers: expects exactly one value", false},
	}
	for _, tt := range tests {
		d := caddyfile.NewTestDispenser("school_gateway http://127.0.0.1:9080 {\n" + tt.options + "\n}")
		d.Next()
		g := Gateway{Options: school.Options{Issuer: "https://school.example"}}
		err := g.UnmarshalCaddyfile(d)
		if err == nil {
			g.SetDefaults()
			err = g.Validate()
		}
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.options, err, tt.want)
			continue
		}
		if err == nil && (g.schoolConfig().IdentityHeaders == school.IdentityHeadersAssertion) != tt.only {
			t.Errorf("%q: AssertionOnly %v, want %v", tt.options, !tt.only, tt.only)
		}
	}
}

// The adapted JSON carries identity_headers as written.
func TestIdentityHeadersAdaptedJSON(t *testing.T) {
	cfg := "http://127.0.0.1:8080 {\n\tschool_gateway http://127.0.0.1:9080 {\n\t\tidentity_assertion on\n\t\tidentity_headers assertion\n\t}\n}\n"
	raw, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"identity_headers":"assertion"`) {
		t.Errorf("adapted config %s", raw)
	}
}
