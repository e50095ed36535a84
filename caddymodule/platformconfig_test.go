package caddymodule

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/registry"
)

// The Caddyfile of a platform adapts to the school_platform handler,
// ordered with no global order option, and to on-demand TLS asking the
// schoolgate permission.
func TestPlatformCaddyfile(t *testing.T) {
	t.Setenv("SCHOOLGATE_DATABASE_URL", "postgres://u@db.example/schools")
	cfg := `{
	on_demand_tls {
		permission schoolgate
	}
}
https:// {
	tls {
		on_demand
	}
	school_platform {
		registry postgres {env.SCHOOLGATE_DATABASE_URL} {
			key_secret {env.SCHOOLGATE_KEY_SECRET}
		}
		max_active 2000
	}
}
`
	raw, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for _, want := range []string{`"handler":"school_platform"`,
		`"registry":{"postgres":{"dsn":"{env.SCHOOLGATE_DATABASE_URL}","key_secret":"{env.SCHOOLGATE_KEY_SECRET}"}}`,
		`"max_active":2000`, `"permission":{"module":"schoolgate"}`} {
		if !strings.Contains(s, want) {
			t.Errorf("the adapted config lacks %s:\n%s", want, s)
		}
	}
	raw, _, err = caddyconfig.GetAdapter("caddyfile").Adapt([]byte(
		"http://:8080 {\n\tschool_platform {\n\t\tregistry dir ./schools\n\t}\n\treverse_proxy 127.0.0.1:9\n}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(raw); !strings.Contains(s, `"registry":{"dir":"./schools"}`) ||
		strings.Index(s, `"handler":"school_platform"`) > strings.Index(s, `"handler":"reverse_proxy"`) {
		t.Errorf("registry dir, ordered before reverse_proxy:\n%s", s)
	}
}

// Every refusal names the option at fault.
func TestPlatformCaddyfileErrors(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{"school_platform", "registry is required"},
		{"school_platform x {\n registry dir /s\n}", "unexpected argument"},
		{"school_platform {\n registry\n}", "registry: expects a kind"},
		{"school_platform {\n registry files /s\n}", `unknown kind "files"`},
		{"school_platform {\n registry dir\n}", "registry dir: expects one path"},
		{"school_platform {\n registry dir /s {\n x\n }\n}", "registry dir: takes no block"},
		{"school_platform {\n registry postgres\n}", "registry postgres: expects one DSN"},
		{"school_platform {\n registry postgres host=/tmp {\n secret k\n }\n}", `registry postgres: unknown option "secret"`},
		{"school_platform {\n registry dir /s\n registry dir /t\n}", "only one registry"},
		{"school_platform {\n registry dir /s\n max_active 0\n}", "max_active"},
		{"school_platform {\n registry dir /s\n max_active many\n}", "max_active"},
		{"school_platform {\n registry dir /s\n upstream http://x\n}", `unknown option "upstream"`},
	} {
		d := caddyfile.NewTestDispenser(tt.body)
		var p Platform
		err := p.UnmarshalCaddyfile(d)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want mention of %q", tt.body, err, tt.want)
		}
	}
	for _, tt := range []struct {
		p    Platform
		want string
	}{
		{Platform{}, "registry: is required"},
		{Platform{Registry: PlatformRegistry{Dir: "/s", Postgres: &PostgresStore{DSN: "host=/tmp", KeySecret: "k"}}}, "one kind only"},
		{Platform{Registry: PlatformRegistry{Postgres: &PostgresStore{DSN: "host=/tmp"}}}, "registry postgres: key_secret is required"},
		{Platform{Registry: PlatformRegistry{Postgres: &PostgresStore{DSN: "postgres://x:notaport/db", KeySecret: "k"}}}, "registry postgres:"},
		{Platform{Registry: PlatformRegistry{Dir: "/s"}, MaxActive: -1}, "max_active"},
	} {
		if err := tt.p.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want mention of %q", tt.p, err, tt.want)
		}
	}
}

// A record's configuration is the school_gateway JSON, checked with the
// directive's rules and messages when it is written: a registry refuses
// what the directive refuses, and what a platform decides (the store,
// the issuer).
func TestRecordValidator(t *testing.T) {
	for _, tt := range []struct {
		name, config, want string
		pg                 bool
	}{
		{name: "good", config: `{"upstream":"http://127.0.0.1:9080","catalog":"https://school.example/feed.json","mcp_connections":true}`},
		{name: "the record's issuer, respelled", config: `{"upstream":"http://127.0.0.1:9080","issuer":"HTTPS://School.Example:443/"}`},
		{name: "data in a dir registry", config: `{"upstream":"http://127.0.0.1:9080","data":"/srv/a"}`},
		{name: "no upstream", config: `{}`, want: "upstream: is required"},
		{name: "an unknown option", config: `{"upstream":"http://127.0.0.1:9080","upsteam":"x"}`, want: `config: json: unknown field "upsteam"`},
		{name: "a language", config: `{"upstream":"http://127.0.0.1:9080","language":"pt"}`},
		{name: "a bad language", config: `{"upstream":"http://127.0.0.1:9080","language":"english"}`, want: `language: "english" is not one of`},
		{name: "a bad value", config: `{"upstream":"http://127.0.0.1:9080","admin_prefix":"admin"}`, want: "admin_prefix:"},
		{name: "a bad rule", config: `{"upstream":"http://127.0.0.1:9080","rules":[{"path":"/admin/api/x","audience":"root"}]}`, want: "audience must be member, operator or deny"},
		{name: "another issuer", config: `{"upstream":"http://127.0.0.1:9080","issuer":"https://other.example"}`, want: "issuer: the configuration names https://other.example"},
		{name: "a store", config: `{"upstream":"http://127.0.0.1:9080","store":{"postgres":{"dsn":"host=/tmp","key_secret":"k"}}}`, want: "store: a school of a platform"},
		{name: "the assertion alone", config: `{"upstream":"http://127.0.0.1:9080","identity_assertion":{},"identity_headers":"assertion"}`},
		{name: "the assertion alone, off", config: `{"upstream":"http://127.0.0.1:9080","identity_headers":"assertion"}`, want: "identity_headers assertion: requires identity_assertion on"},
		{name: "data in a postgres registry", config: `{"upstream":"http://127.0.0.1:9080","data":"/srv/a"}`, pg: true, want: "data: a school of a postgres registry"},
	} {
		validate := validateDirRecord
		if tt.pg {
			validate = validatePostgresRecord
		}
		m := registry.NewMemory(validate)
		_, err := m.Put(t.Context(), registry.Record{Issuer: "https://school.example", Config: json.RawMessage(tt.config)})
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// caddy validate of a platform opens no registry: no directory made
// under a registry dir, no table in a registry's database.
func TestPlatformValidateOpensNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "schools")
	cfg := fmt.Sprintf("{\n\tadmin off\n}\nhttp://127.0.0.1:9111 {\n\tschool_platform {\n\t\tregistry dir %s\n\t}\n}\n", dir)
	var dsn string
	if !testing.Short() {
		dsn = pgcluster.Database(t)
		cfg += fmt.Sprintf("http://127.0.0.1:9112 {\n\tschool_platform {\n\t\tregistry postgres %q {\n\t\t\tkey_secret k\n\t\t}\n\t}\n}\n", dsn)
	}
	if err := validateCaddyfile(t, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("validate made the registry's directory: %v", err)
	}
	if dsn != "" {
		if n := userTables(t, dsn); n != 0 {
			t.Errorf("validate left %d tables in the registry's database", n)
		}
	}
	two := fmt.Sprintf("{\n\tadmin off\n}\nhttp://127.0.0.1:9113 {\n\tschool_platform {\n\t\tregistry dir %s\n\t}\n}\n"+
		"http://127.0.0.1:9114 {\n\tschool_platform {\n\t\tregistry dir %s\n\t\tmax_active 5\n\t}\n}\n", dir, dir)
	if err := validateCaddyfile(t, two); err == nil || !strings.Contains(err.Error(), "max_active") {
		t.Errorf("one registry, two max_active: %v", err)
	}
}

// The record file docs/registry-files.md shows is one the platform's
// registry dir reads, under the name the page gives it.
func TestRegistryFilesPageRecordFile(t *testing.T) {
	guide, err := os.ReadFile("../docs/registry-files.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(guide), "## The record")
	if !ok {
		t.Fatal("docs/registry-files.md: no section on the record")
	}
	_, block, ok := strings.Cut(after, "```json\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("docs/registry-files.md: the record's section has no JSON example")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "school.example.json"), []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.OpenDir(dir, validateDirRecord, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	rec, err := reg.Get(t.Context(), "https://school.example")
	if err != nil {
		t.Fatalf("the guide's record is not read: %v", err)
	}
	if len(rec.Hosts) != 1 || rec.Hosts[0] != "www.school.example" {
		t.Errorf("hosts %v", rec.Hosts)
	}
}
