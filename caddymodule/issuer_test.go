package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/school"
)

// runGateways runs, in this process, a config whose one server has a
// school_gateway handler per entry of gateways (a site block each), with
// Caddy's data directory under dataHome. It returns the load's error; a
// config that loaded is stopped when the test ends.
func runGateways(t *testing.T, dataHome string, gateways ...map[string]any) error {
	t.Helper()
	var routes []any
	for _, g := range gateways {
		h := map[string]any{"handler": "school_gateway", "upstream": "http://127.0.0.1:9"}
		for k, v := range g {
			h[k] = v
		}
		routes = append(routes, map[string]any{"handle": []any{h}})
	}
	return runConfig(t, dataHome, map[string]any{"apps": map[string]any{"http": map[string]any{
		"servers": map[string]any{"s": map[string]any{"routes": routes}}}}})
}

// runCaddyfile runs an adapted Caddyfile as runGateways does.
func runCaddyfile(t testing.TB, dataHome, caddyfile string) error {
	t.Helper()
	raw, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), nil)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	return runConfig(t, dataHome, cfg)
}

// runConfig runs cfg with no admin endpoint, no log, its servers on a
// loopback port of their own without automatic HTTPS, and Caddy's data
// directory under dataHome.
func runConfig(t testing.TB, dataHome string, cfg map[string]any) error {
	t.Helper()
	t.Setenv("XDG_DATA_HOME", dataHome)
	cfg["admin"] = map[string]any{"disabled": true}
	cfg["logging"] = map[string]any{"logs": map[string]any{"default": map[string]any{"writer": map[string]any{"output": "discard"}}}}
	cfg["storage"] = map[string]any{"module": "file_system", "root": filepath.Join(dataHome, "storage")}
	for _, srv := range cfg["apps"].(map[string]any)["http"].(map[string]any)["servers"].(map[string]any) {
		srv.(map[string]any)["listen"] = []string{"127.0.0.1:0"}
		srv.(map[string]any)["automatic_https"] = map[string]any{"disable": true}
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := caddy.Load(raw, true); err != nil {
		return err
	}
	t.Cleanup(func() {
		if err := caddy.Stop(); err != nil {
			t.Error(err)
		}
	})
	return nil
}

// schoolDirs lists the directories under Caddy's data directory's
// schoolgate/.
func schoolDirs(t *testing.T, dataHome string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dataHome, "caddy", "schoolgate"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// metricSites lists the values of the label "site" in the running config's
// metrics.
func metricSites(t *testing.T) []string {
	t.Helper()
	ctx := caddy.ActiveContext()
	families, err := ctx.GetMetricsRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "schoolgate_") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "site" && !slices.Contains(out, l.GetValue()) {
					out = append(out, l.GetValue())
				}
			}
		}
	}
	return out
}

// However the issuer is written, a school is provisioned under its one
// spelling: one data directory, the App's key, the metrics label, the
// catalog's item URLs and the school's name before a feed names it.
func TestIssuerOneSpelling(t *testing.T) {
	const canonical = "https://school.example"
	for _, written := range []string{"HTTPS://School.Example:443/", "https://school.example/", "https://school.example:443",
		"https://SCHOOL.EXAMPLE", "https://School.Example:0443"} {
		t.Run(written, func(t *testing.T) {
			home := t.TempDir()
			if err := runGateways(t, home, map[string]any{"issuer": written}); err != nil {
				t.Fatal(err)
			}
			if dirs := schoolDirs(t, home); !slices.Equal(dirs, []string{"school.example"}) {
				t.Errorf("data directories %v, want [school.example]", dirs)
			}
			app, err := runningApp()
			if err != nil {
				t.Fatal(err)
			}
			if len(app.sites) != 1 || app.sites[canonical] == nil || len(app.Failed()) != 0 {
				t.Fatalf("registry %v, failed %d; want the school under %s", app.sites, len(app.Failed()), canonical)
			}
			s := app.sites[canonical]
			if s.gateway.Issuer != canonical || s.Issuer() != canonical || s.Auth().Issuer() != canonical {
				t.Errorf("issuer %q (school %q, authorization server %q), want %s", s.gateway.Issuer, s.Issuer(), s.Auth().Issuer(), canonical)
			}
			s.observe.MCPCaller("anonymous") // a school's series are there once it counted something
			if got := metricSites(t); !slices.Equal(got, []string{canonical}) {
				t.Errorf("metrics label site %v, want [%s]", got, canonical)
			}
			// Without a feed, the school is named by its origin.
			rec := httptest.NewRecorder()
			if err := s.Serve(rec, httptest.NewRequest("GET", "/llms.txt", nil), nil); err != nil {
				t.Fatal(err)
			}
			if first, _, _ := strings.Cut(rec.Body.String(), "\n"); first != `# https\://school.example` {
				t.Errorf("school name without a feed %q, want %s", first, canonical)
			}
		})
	}
}

// Two site blocks that spell one issuer differently are one school twice:
// refused as such, and without a second data directory.
func TestIssuerTwoSpellingsRefused(t *testing.T) {
	home := t.TempDir()
	err := runGateways(t, home, map[string]any{"issuer": "https://school.example"},
		map[string]any{"issuer": "HTTPS://School.Example:443/", "session_url": "/api/me"})
	if err == nil || !strings.Contains(err.Error(), "https://school.example is configured in two site blocks") {
		t.Fatalf("two spellings of one issuer: %v", err)
	}
	if dirs := schoolDirs(t, home); len(dirs) > 1 {
		t.Errorf("data directories %v: the second spelling made its own", dirs)
	}
}

// So are two site blocks of a Caddyfile whose addresses or issuer options
// spell one issuer differently.
func TestCaddyfileTwoSpellingsRefused(t *testing.T) {
	block := func(addr, issuer string) string {
		if issuer != "" {
			issuer = " {\n\t\tissuer " + issuer + "\n\t}"
		}
		return addr + " {\n\tschool_gateway http://127.0.0.1:9" + issuer + "\n}\n"
	}
	for _, tt := range []struct{ name, caddyfile string }{
		{"site addresses", block("School.Example", "") + block("school.example", "")},
		{"site address with the default port", block("https://School.Example:443", "") + block("school.example", "")},
		{"issuer options", block("a.example", "HTTPS://School.Example:443/") + block("b.example", "https://school.example")},
		{"site address and issuer option", block("school.example", "") + block("b.example", "https://SCHOOL.EXAMPLE/")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			err := runCaddyfile(t, home, tt.caddyfile)
			if err == nil || !strings.Contains(err.Error(), "https://school.example is configured in two site blocks") {
				t.Fatalf("two spellings of one issuer: %v", err)
			}
			if dirs := schoolDirs(t, home); len(dirs) > 1 {
				t.Errorf("data directories %v: the second spelling made its own", dirs)
			}
		})
	}
}

// A school kept in PostgreSQL has one site row, under its issuer's one
// spelling.
func TestIssuerOneSiteRow(t *testing.T) {
	dsn := pgcluster.Database(t)
	err := runGateways(t, t.TempDir(), map[string]any{"issuer": "HTTPS://School.Example:443/",
		"store": map[string]any{"postgres": map[string]any{"dsn": dsn, "key_secret": "k"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT issuer FROM sites ORDER BY issuer`)
	if err != nil {
		t.Fatal(err)
	}
	issuers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(issuers, []string{"https://school.example"}) {
		t.Errorf("site rows %q, want one, https://school.example", issuers)
	}
}

// The admin API and the CLI find a school however the operator spells its
// issuer, and name a bad one; a school that failed to load is a 503.
func TestSiteOfAnySpelling(t *testing.T) {
	ts := newTestSite(t, nil)
	failed := &Gateway{Options: school.Options{Issuer: "https://failed.example", Upstream: "http://127.0.0.1:9"}}
	failed.SetDefaults()
	app := &App{sites: map[string]*site{ts.g.Issuer: ts.site}, failed: map[string]*failedSite{
		failed.Issuer: newFailedSite(failed, &school.BuildError{Reason: "its store could not be opened", Err: errors.New("data: locked")})}}
	prev := activeApp
	activeApp = func() (any, error) { return app, nil }
	t.Cleanup(func() { activeApp = prev })
	for _, spelled := range []string{"https://school.example", "HTTPS://School.Example:443/", "https://SCHOOL.example/"} {
		if s, _, err := siteOf(httptest.NewRecorder(), spelled); err != nil || s != ts.site {
			t.Errorf("%s: %v", spelled, err)
		}
	}
	for _, tt := range []struct {
		issuer string
		status int
	}{{"https://other.example", http.StatusNotFound}, {"HTTPS://failed.example", http.StatusServiceUnavailable},
		{"school.example", http.StatusBadRequest},
		{"https://school.example/admin", http.StatusBadRequest}} {
		var apiErr caddy.APIError
		if _, _, err := siteOf(httptest.NewRecorder(), tt.issuer); !errors.As(err, &apiErr) || apiErr.HTTPStatus != tt.status {
			t.Errorf("%s: %v, want %d", tt.issuer, err, tt.status)
		}
	}
}

// makeSchoolDir leaves a bbolt file in dir, as a school that ran there
// would.
func makeSchoolDir(t *testing.T, dir string) {
	t.Helper()
	makeSchoolFile(t, filepath.Join(dir, "school.db"))
}

// makeSchoolFile leaves a bbolt file at path: a new store's file has its
// name from its first commit on.
func makeSchoolFile(t *testing.T, path string) {
	t.Helper()
	s, err := boltstore.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := boltstore.Fill(s, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A directory an earlier version named after another spelling of the
// issuer is never silently left beside a new, empty one: the school fails
// to load, naming both paths, until the operator moves it or sets data.
func TestIssuerDirectoryOfAnotherSpelling(t *testing.T) {
	const issuer = "https://school.example"
	tests := []struct {
		name  string
		setup func(t *testing.T, root string)
		data  func(root string) string
		// want are what the failure names; none is a school that serves.
		want []string
	}{
		{"written with the default port", func(t *testing.T, root string) {
			makeSchoolDir(t, filepath.Join(root, "School.Example_443"))
		}, nil, []string{"School.Example_443", "move", "set data"}},
		{"written in upper case", func(t *testing.T, root string) {
			makeSchoolDir(t, filepath.Join(root, "SCHOOL.EXAMPLE"))
		}, nil, []string{"SCHOOL.EXAMPLE", "move"}},
		{"both directories", func(t *testing.T, root string) {
			makeSchoolDir(t, filepath.Join(root, "School.Example"))
			makeSchoolDir(t, filepath.Join(root, "school.example"))
		}, nil, []string{"each of", "School.Example", filepath.Join("schoolgate", "school.example") + ","}},
		{"two other spellings", func(t *testing.T, root string) {
			makeSchoolDir(t, filepath.Join(root, "School.Example"))
			makeSchoolDir(t, filepath.Join(root, "school.example_443"))
		}, nil, []string{"each of", "School.Example", "school.example_443", "make it"}},
		{"an empty directory of another spelling", func(t *testing.T, root string) {
			if err := os.MkdirAll(filepath.Join(root, "School.Example_443"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, nil, nil},
		{"the school's directory is the other one", func(t *testing.T, root string) {
			// As on a file system that ignores case.
			makeSchoolDir(t, filepath.Join(root, "School.Example_443"))
			if err := os.Symlink("School.Example_443", filepath.Join(root, "school.example")); err != nil {
				t.Fatal(err)
			}
		}, nil, nil},
		{"data set to the old directory", func(t *testing.T, root string) {
			makeSchoolDir(t, filepath.Join(root, "School.Example_443"))
		}, func(root string) string { return filepath.Join(root, "School.Example_443") }, nil},
		{"other schools' directories", func(t *testing.T, root string) {
			for _, d := range []string{"school.example_8443", "school.example_80", "school.example.org", "other.example"} {
				makeSchoolDir(t, filepath.Join(root, d))
			}
		}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			root := filepath.Join(home, "caddy", "schoolgate")
			tt.setup(t, root)
			before := schoolDirs(t, home)
			g := map[string]any{"issuer": issuer}
			if tt.data != nil {
				g["data"] = tt.data(root)
			}
			if err := runGateways(t, home, g); err != nil {
				t.Fatal(err)
			}
			app, err := runningApp()
			if err != nil {
				t.Fatal(err)
			}
			failed := app.Failed()
			if tt.want == nil {
				if len(failed) != 0 || app.sites[issuer] == nil {
					t.Fatalf("the school does not serve: %v", failed)
				}
				return
			}
			if len(failed) != 1 || failed[0].issuer != issuer {
				t.Fatalf("the school is not held back: %v", failed)
			}
			reason := failed[0].failure.Load().Error()
			for _, w := range append(tt.want, root, issuer) {
				if !strings.Contains(reason, w) {
					t.Errorf("the reason does not name %q: %s", w, reason)
				}
			}
			if after := schoolDirs(t, home); !slices.Equal(before, after) {
				t.Errorf("data directories %v, were %v: none may be made or moved", after, before)
			}
		})
	}
}
