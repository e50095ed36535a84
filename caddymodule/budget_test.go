package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/schoolgate/schoolgate/metrics"
	"github.com/schoolgate/schoolgate/option"
	"github.com/schoolgate/schoolgate/school"
)

func TestBudgetCaddyfile(t *testing.T) {
	d := caddyfile.NewTestDispenser(`school_gateway http://127.0.0.1:9080 {
		weight 3
		budget {
			requests 100/s 200
			mcp_anonymous 30/m
			legacy_concurrency 16
			legacy_timeout 2m
		}
	}`)
	d.Next()
	var g Gateway
	if err := g.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	g.Issuer = "https://school.example"
	g.SetDefaults()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	c := g.schoolConfig()
	if c.Weight != 3 || c.Budget.LegacyConcurrency != 16 || g.LegacyTimeout() != 2*time.Minute {
		t.Errorf("weight %d, legacy_concurrency %d, legacy_timeout %s", c.Weight, c.Budget.LegacyConcurrency, g.LegacyTimeout())
	}
	if want := (option.Rate{Events: 100, Period: option.Duration(time.Second), Burst: 200}); *c.Budget.Requests != want {
		t.Errorf("requests %+v, want %+v", c.Budget.Requests, want)
	}
	if want := (option.Rate{Events: 30, Period: option.Duration(time.Minute), Burst: 30}); *c.Budget.MCPAnonymous != want {
		t.Errorf("mcp_anonymous %+v, want %+v (burst defaults to the events)", c.Budget.MCPAnonymous, want)
	}
	if def := (&Gateway{}).schoolConfig(); def.Budget != nil || def.LegacyTimeout() != school.DefaultLegacyTimeout {
		t.Errorf("default budget %+v", def.Budget)
	}
}

func TestBudgetErrorsNameTheOption(t *testing.T) {
	tests := []struct{ body, want string }{
		{"weight 0", "weight"},
		{"weight -2", "weight"},
		{"weight x", "weight"},
		{"weight", "weight"},
		{"budget 5", "budget: options go in a block"},
		{"budget {\n requests 0/s\n}", "budget requests"},
		{"budget {\n requests 10/d\n}", "budget requests"},
		{"budget {\n mcp_anonymous 10/s 0\n}", "budget mcp_anonymous: burst"},
		{"budget {\n legacy_concurrency 0\n}", "budget legacy_concurrency"},
		{"budget {\n legacy_concurrency many\n}", "budget legacy_concurrency"},
		{"budget {\n legacy_timeout 0s\n}", "budget legacy_timeout"},
		{"budget {\n legacy_timeout soon\n}", "budget legacy_timeout"},
		{"budget {\n legacy_timeout\n}", "budget legacy_timeout"},
		{"budget {\n cpu 5\n}", `budget: unknown option "cpu"`},
	}
	for _, tt := range tests {
		d := caddyfile.NewTestDispenser("school_gateway http://127.0.0.1:9 {\n" + tt.body + "\n}")
		d.Next()
		var g Gateway
		err := g.UnmarshalCaddyfile(d)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want mention of %q", tt.body, err, tt.want)
		}
	}
}

// The JSON (and so a registry record) is checked by the one validator.
func TestBudgetValidateNamesTheOption(t *testing.T) {
	tests := []struct{ json, want string }{
		{`{"weight": -1}`, "weight"},
		{`{"budget": {"requests": {"events": 0, "period": "1s"}}}`, "budget requests"},
		{`{"budget": {"mcp_anonymous": {"events": 5, "period": "1s", "burst": -1}}}`, "budget mcp_anonymous"},
		{`{"budget": {"legacy_concurrency": -3}}`, "budget legacy_concurrency"},
		{`{"budget": {"legacy_timeout": "-5s"}}`, "budget legacy_timeout"},
		{`{"weight": 2, "budget": {"requests": {"events": 5, "period": "1s"}, "legacy_concurrency": 4}}`, ""},
	}
	for _, tt := range tests {
		g := Gateway{Options: school.Options{Upstream: "http://127.0.0.1:9080", Issuer: "https://school.example"}}
		if err := json.Unmarshal([]byte(tt.json), &g); err != nil {
			t.Fatal(err)
		}
		g.SetDefaults()
		err := g.Validate()
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: error %v, want mention of %q", tt.json, err, tt.want)
		}
	}
}

func TestGlobalOption(t *testing.T) {
	parse := func(body string) (*App, error) {
		d := caddyfile.NewTestDispenser(body)
		v, err := parseGlobalOption(d, nil)
		if err != nil {
			return nil, err
		}
		a := new(App)
		if err := json.Unmarshal(v.(httpcaddyfile.App).Value, a); err != nil {
			t.Fatal(err)
		}
		return a, a.Validate()
	}
	a, err := parse("schoolgate {\n fair_share {\n concurrency 8\n queue 32\n wait 2s\n }\n metrics_per_school top 20\n}")
	if err != nil {
		t.Fatal(err)
	}
	if f := a.FairShare; f == nil || f.Concurrency != 8 || f.Queue != 32 || f.Wait != caddy.Duration(2*time.Second) || f.Off {
		t.Errorf("fair_share %+v", a.FairShare)
	}
	if mode, top, _ := metrics.ParsePerSchool(a.MetricsPerSchool); mode != metrics.PerSchoolTop || top != 20 {
		t.Errorf("metrics_per_school %q: %s %d", a.MetricsPerSchool, mode, top)
	}
	if a, err := parse("schoolgate {\n fair_share off\n metrics_per_school none\n}"); err != nil || !a.FairShare.Off || a.MetricsPerSchool != "none" {
		t.Errorf("off/none: %+v %v", a, err)
	}
	bad := []struct{ body, want string }{
		{"schoolgate {\n fair_share {\n concurrency 0\n }\n}", "fair_share concurrency"},
		{"schoolgate {\n fair_share {\n queue -1\n }\n}", "fair_share queue"},
		{"schoolgate {\n fair_share {\n wait soon\n }\n}", "fair_share wait"},
		{"schoolgate {\n fair_share {\n speed 3\n }\n}", `fair_share: unknown option "speed"`},
		{"schoolgate {\n fair_share on\n}", "fair_share"},
		{"schoolgate {\n metrics_per_school some\n}", "metrics_per_school"},
		{"schoolgate {\n metrics_per_school top 0\n}", "metrics_per_school"},
		{"schoolgate {\n metrics_per_school top\n}", "metrics_per_school"},
		{"schoolgate {\n metrics_per_school\n}", "metrics_per_school"},
		{"schoolgate {\n colour red\n}", `unknown global option "colour"`},
	}
	for _, tt := range bad {
		if _, err := parse(tt.body); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want mention of %q", tt.body, err, tt.want)
		}
	}
	for _, js := range []string{`{"fair_share": {"concurrency": -1}}`, `{"metrics_per_school": "top -3"}`, `{"metrics_per_school": "most"}`} {
		a := new(App)
		if err := json.Unmarshal([]byte(js), a); err != nil {
			t.Fatal(err)
		}
		if a.Validate() == nil {
			t.Errorf("%s: accepted", js)
		}
	}
}

// The global option reaches the app's JSON through Caddy's adapter.
func TestGlobalOptionAdapts(t *testing.T) {
	raw := []byte("{\n\tschoolgate {\n\t\tfair_share {\n\t\t\tconcurrency 6\n\t\t}\n\t\tmetrics_per_school all\n\t}\n}\n\nhttp://school.example {\n\tschool_gateway http://127.0.0.1:9080 {\n\t\tweight 2\n\t}\n}\n")
	out, _, err := caddyfile.Adapter{ServerType: httpcaddyfile.ServerType{}}.Adapt(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Apps map[string]json.RawMessage `json:"apps"`
	}
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	a := new(App)
	if err := json.Unmarshal(cfg.Apps[appName], a); err != nil {
		t.Fatalf("apps.%s: %v in %s", appName, err, out)
	}
	if a.FairShare == nil || a.FairShare.Concurrency != 6 || a.MetricsPerSchool != "all" {
		t.Errorf("apps.%s = %s", appName, cfg.Apps[appName])
	}
	if !strings.Contains(string(out), `"weight":2`) {
		t.Errorf("the site's weight is not in %s", out)
	}
}
