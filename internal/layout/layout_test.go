package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"testing"
)

// module is the import path of the module whose layout this is.
const module = "github.com/schoolgate/schoolgate"

// rules is the layout: a row per package of the module (by its path
// below the module, "." the module's own), naming the packages of the
// module it may import and the guarded outside packages it may use, and
// why. A package without a row fails the test, and so does a row without
// a package: adding a package is adding its row here. The rules hold for
// what a package's own files import, not its tests'.
//
// The module's packages are checked on direct imports: with a row for
// every package, what one reaches through others is allowed by their
// rows in turn.
var rules = []rule{
	{".", []string{"caddymodule"}, []string{caddy}, "the plugin's import path for xcaddy: it registers the modules"},
	{"adminapi", []string{"authserver", "catalog", "dataroot", "i18n", "policy", "registry", "school", "store"}, nil,
		"the admin API's operations on one school without Caddy: the adapter registers the routes and finds the school"},
	{"admission", []string{"internal/cputime"}, nil, "the instance's fair share is plain Go: school asks it and caddymodule owns it"},
	{"authserver", []string{"i18n", "internal/jsonappend", "option", "policy", "sitepath", "store"}, []string{jwx},
		"the protocol stands on the store's contract, never on a backend, and draws no page: it asks its Pages, which package pages draws"},
	{"bench", everything, []string{jwx, pgx, mcpgo}, "a tool: it may drive anything"},
	{"boltstore", []string{"internal/cputime", "internal/jsonappend", "store"}, []string{bbolt}, "a backend implements the store's contract and never sees the protocol"},
	{"caddymodule", everything, []string{caddy}, "the adapter: the only package of the product that imports Caddy, and nothing imports it"},
	{"catalog", []string{"internal/source"}, nil, "the feed and its index: no Caddy, no store"},
	{"catalog/catalogtest", nil, nil, "a test feed, for the tests of every package"},
	{"cmd/build-caddy", nil, []string{caddy}, "builds Caddy with the modules (xcaddy)"},
	{"cmd/caddy", []string{"caddymodule"}, []string{caddy}, "Caddy with the modules"},
	{"cmd/demoschool", []string{"demoschool"}, nil, "the demo school's command"},
	{"dataroot", []string{"boltstore"}, nil,
		"the default data root of bbolt files, a directory per school named after its issuer, and the earlier spellings a school must not start beside: plain Go"},
	{"demoschool", nil, []string{htmlTemplate, jwx}, "the demo legacy school stands alone: it knows the gateway only by what it sends"},
	{"e2e", nil, nil, "end-to-end tests only: no code of the product"},
	{"i18n", nil, nil, "the pages' words: plain text, for pages and authserver"},
	{"internal/cputime", nil, nil, "the process's and a thread's CPU time, for the fair share: plain Go"},
	{"internal/dpopclient", nil, []string{jwx}, "a DPoP client for the tests and the benchmarks"},
	{"internal/startgate", nil, nil, "what a handler serves once built, awaited by the requests that came before: plain Go"},
	{"internal/jsonappend", nil, nil, "JSON strings written as encoding/json writes them, for the records the token path writes by hand: plain Go"},
	{"internal/layout", nil, nil, "this test"},
	{"internal/pgcluster", nil, []string{pgx}, "throwaway PostgreSQL servers for the tests and the benchmarks"},
	{"internal/procstat", nil, nil, "a process's CPU and memory, for the benchmarks"},
	{"internal/schedule", nil, nil, "the shared scheduler: plain Go"},
	{"internal/source", nil, nil, "fetching a source by URL or path: plain Go"},
	{"metrics", []string{"authserver", "policy", "store"}, nil,
		"the schools' counters and their Prometheus collector: plain Go over a Registerer the adapter hands it"},
	{"operator", []string{"adminapi", "boltstore", "dataroot", "pgstore", "policy", "registry"}, nil,
		"the operator's command line (caddy schoolgate) without Caddy: the admin API's calls, their flags and plain-words refusals, and the store commands; the adapter registers it and hands it Caddy's way to the admin API"},
	{"option", nil, nil, "the value types of a school's options (a duration, a rate), the same in JSON and a Caddyfile: a leaf"},
	{"mcpserver", []string{"catalog", "policy"}, []string{mcpgo}, "the MCP server: no Caddy, no store backend"},
	{"pages", []string{"authserver", "i18n", "policy", "sitepath", "store"}, []string{htmlTemplate},
		"the pages reach the store only through the authorization server's exported operations"},
	{"pgstore", []string{"policy", "registry", "store"}, []string{pgx},
		"a backend implements the store's and the registry's contracts and never sees the protocol"},
	{"platform", []string{"internal/startgate", "policy", "registry", "school"}, nil, "the platform of schools without Caddy: the lazily built school, how it is held and let go of (past max_active first), the host table of a registry's records and a request's way through it to its school (school.Site.Serve), the registry's watch and what a change or a claim does to the table; the adapter builds the schools (Builder)"},
	{"policy", []string{"sitepath"}, []string{jwx}, "paths, origins, tokens and rules: below the protocol"},
	{"registry", []string{"policy"}, nil, "a platform's records: plain Go, the adapter hands it its Validator"},
	{"registry/registrytest", []string{"registry"}, nil, "the registry's conformance suite"},
	{"school", []string{"admission", "authserver", "catalog", "i18n", "internal/schedule", "internal/source",
		"mcpserver", "option", "pages", "policy", "sitedocs", "sitepath", "store"}, nil,
		"one school without Caddy, built many times on demand from plain configuration"},
	{"schooltest", []string{"sitepath", "store"}, []string{jwx},
		"the test school and the helpers the tests of several packages share: below the protocol, so every package's tests may use it"},
	{"sitedocs", []string{"catalog", "mcpserver", "policy", "sitepath"}, nil,
		"the documents are rendered from what their caller gives them, never from the authorization server"},
	{"sitepath", nil, nil, "the gateway's paths: a leaf"},
	{"store", nil, nil, "the store's contract: a leaf"},
	{"store/storetest", []string{"store"}, nil, "the store's conformance suite"},
	{"storepool", []string{"boltstore", "pgstore", "store"}, nil,
		"the running schools' stores shared between configs: a bbolt file opened once, a PostgreSQL pool per database; plain Go"},
}

// The outside packages the layout guards, each only in the packages
// whose row names it. Caddy is guarded on everything a package links,
// through any module; the others on what a package imports itself.
const (
	caddy        = "github.com/caddyserver"
	htmlTemplate = "html/template"
	jwx          = "github.com/lestrrat-go/jwx"
	pgx          = "github.com/jackc/pgx"
	bbolt        = "go.etcd.io/bbolt"
	mcpgo        = "github.com/mark3labs/mcp-go"
)

var guards = []guard{
	{caddy, true, "Caddy only in the adapter: the core is plain Go, testable with httptest"},
	{htmlTemplate, false, "HTML is drawn by package pages"},
	{jwx, false, "JOSE where tokens and keys are made and checked"},
	{pgx, false, "the PostgreSQL driver is the PostgreSQL backend's"},
	{bbolt, false, "the bbolt file is the bbolt backend's"},
	{mcpgo, false, "mcp-go is the MCP server's"},
}

// everything, as a row's imports, allows every package of the module.
var everything = []string{"*"}

// TestLayout checks every package of the module against its row.
func TestLayout(t *testing.T) {
	pkgs, err := listModule()
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range check(module, pkgs, rules, guards) {
		t.Error(problem)
	}
}

// listModule lists the module's packages with their imports and
// dependencies, as their own files (not their tests) have them.
func listModule() ([]listed, error) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New("go list: " + err.Error() + "\n" + stderr.String())
	}
	var pkgs []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
}
