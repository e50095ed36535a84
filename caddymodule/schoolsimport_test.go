package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/operator"
	"github.com/schoolgate/schoolgate/pgstore"
	"github.com/schoolgate/schoolgate/registry"
)

// importFixture is a Caddyfile of five school_gateway site blocks, three
// of which can be records (one with an alias, one with an option, one
// keeping its data in Caddy's data directory), and the bbolt files of
// those three.
type importFixture struct {
	caddyfile        string
	dataA, dataB     string
	defaultC, dbFile map[string]string
}

func newImportFixture(t *testing.T) *importFixture {
	t.Helper()
	root := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(root, "xdg"))
	f := &importFixture{dataA: filepath.Join(root, "a"), dataB: filepath.Join(root, "b"), caddyfile: filepath.Join(root, "Caddyfile")}
	dataC := filepath.Join(root, "xdg", "caddy", "schoolgate", "127.0.0.1_18083")
	for _, dir := range []string{f.dataA, f.dataB, dataC} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		makeSchoolFile(t, filepath.Join(dir, "school.db"))
	}
	cfg := `{
	admin off
}
http://127.0.0.1:18081, http://Localhost:18081 {
	school_gateway http://127.0.0.1:9 {
		data ` + f.dataA + `
	}
}
http://127.0.0.1:18082 {
	school_gateway http://127.0.0.1:9/ {
		data ` + f.dataB + `
		code_ttl 30s
		session_url /api/session
	}
}
http://127.0.0.1:18083 {
	school_gateway http://127.0.0.1:9
}
http://127.0.0.1:18084 {
	school_gateway http://127.0.0.1:9 {
		data ` + filepath.Join(root, "d") + `
		upstream {
			lb_policy first
		}
	}
}
http://127.0.0.1:18085 {
	respond /health 200
	school_gateway http://127.0.0.1:9 {
		data ` + filepath.Join(root, "e") + `
	}
}
`
	if err := os.WriteFile(f.caddyfile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func readRegistryDir(t *testing.T, dir string) map[string]registry.Record {
	t.Helper()
	d, err := registry.OpenDir(dir, validateDirRecord, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	list, err := d.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]registry.Record{}
	for _, r := range list {
		out[r.Issuer] = r
	}
	return out
}

// An import turns the school_gateway site blocks into records that keep
// each school's data where it is (data), the block's other addresses
// its hosts and its options but the directive's defaults; it refuses,
// naming them, the blocks a record cannot express (an upstream block,
// another handler), writing nothing unless --partial, and a second run
// changes nothing.
func TestImportCaddyfile(t *testing.T) {
	f := newImportFixture(t)
	ctx := context.Background()
	reg := filepath.Join(t.TempDir(), "registry")
	var out bytes.Buffer

	err := importer.Run(ctx, &out, operator.ImportOptions{Caddyfile: f.caddyfile, Kind: "dir", Target: reg})
	if err == nil || !strings.Contains(err.Error(), "http://127.0.0.1:18084") || !strings.Contains(err.Error(), "http://127.0.0.1:18085") ||
		!strings.Contains(out.String(), "upstream block") || !strings.Contains(out.String(), "static_response") {
		t.Fatalf("an import with blocks that cannot be records: %v\n%s", err, out.String())
	}
	if got := readRegistryDir(t, reg); len(got) != 0 {
		t.Fatalf("records written without --partial: %v", got)
	}

	out.Reset()
	dry := filepath.Join(t.TempDir(), "never")
	if err := importer.Run(ctx, &out, operator.ImportOptions{Caddyfile: f.caddyfile, Kind: "dir", Target: dry, Partial: true, DryRun: true}); err != nil {
		t.Fatalf("dry run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `"issuer": "http://127.0.0.1:18081"`) || !strings.Contains(out.String(), "localhost:18081") {
		t.Errorf("the dry run's records:\n%s", out.String())
	}
	if _, err := os.Stat(dry); err == nil {
		t.Error("a dry run created the registry")
	}

	out.Reset()
	if err := importer.Run(ctx, &out, operator.ImportOptions{Caddyfile: f.caddyfile, Kind: "dir", Target: reg, Partial: true}); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	got := readRegistryDir(t, reg)
	if len(got) != 3 {
		t.Fatalf("%d records: %v\n%s", len(got), got, out.String())
	}
	config := func(issuer string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(got[issuer].Config, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b, c := config("http://127.0.0.1:18081"), config("http://127.0.0.1:18082"), config("http://127.0.0.1:18083")
	if a["data"] != f.dataA || a["upstream"] != "http://127.0.0.1:9" || len(a) != 2 ||
		!slices.Equal(got["http://127.0.0.1:18081"].Hosts, []string{"localhost:18081"}) {
		t.Errorf("the school with an alias: %+v %v", got["http://127.0.0.1:18081"], a)
	}
	if b["data"] != f.dataB || b["code_ttl"] == nil || b["session_url"] != nil || b["issuer"] != nil || b["upstream"] != "http://127.0.0.1:9" {
		t.Errorf("the school with options: %v (the options kept, the defaults and the issuer left out)", b)
	}
	if c["data"] != filepath.Join(os.Getenv("XDG_DATA_HOME"), "caddy", "schoolgate", "127.0.0.1_18083") {
		t.Errorf("the school in Caddy's data directory: %v", c)
	}

	out.Reset()
	if err := importer.Run(ctx, &out, operator.ImportOptions{Caddyfile: f.caddyfile, Kind: "dir", Target: reg, Partial: true}); err != nil ||
		!strings.Contains(out.String(), "0 imported, 3 unchanged, 2 refused") {
		t.Errorf("a second run: %v\n%s", err, out.String())
	}
	for issuer, r := range readRegistryDir(t, reg) {
		if r.Version != 1 {
			t.Errorf("%s: version %d after a second run", issuer, r.Version)
		}
	}
}

// --move moves each bbolt file into the registry's directory for its
// school, never one a running Caddy holds, and the record names no data;
// a second run leaves everything as it is.
func TestImportMove(t *testing.T) {
	f := newImportFixture(t)
	ctx := context.Background()
	reg := filepath.Join(t.TempDir(), "registry")
	held, err := boltstore.Open(filepath.Join(f.dataA, "school.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o := operator.ImportOptions{Caddyfile: f.caddyfile, Kind: "dir", Target: reg, Partial: true, Move: true}
	if err := importer.Run(ctx, &out, o); err == nil || !strings.Contains(err.Error(), "stop it first") {
		t.Fatalf("a move of a held file: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(f.dataA, "school.db")); err != nil {
		t.Fatalf("the held file moved: %v", err)
	}
	if got := readRegistryDir(t, reg); len(got["http://127.0.0.1:18081"].Config) != 0 {
		t.Fatalf("the record of a school whose file could not move was written: %s", got["http://127.0.0.1:18081"].Config)
	}
	held.Close()

	out.Reset()
	if err := importer.Run(ctx, &out, o); err != nil {
		t.Fatalf("import --move: %v\n%s", err, out.String())
	}
	got := readRegistryDir(t, reg)
	if len(got) != 3 || strings.Contains(string(got["http://127.0.0.1:18081"].Config), "data") {
		t.Errorf("records after the move: %v", got)
	}
	for _, name := range []string{"127.0.0.1_18081", "127.0.0.1_18082", "127.0.0.1_18083"} {
		if _, err := os.Stat(filepath.Join(reg, name, "school.db")); err != nil {
			t.Errorf("%s: not moved: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(f.dataA, "school.db")); err == nil {
		t.Error("the file is still at its old place")
	}
	out.Reset()
	if err := importer.Run(ctx, &out, o); err != nil || !strings.Contains(out.String(), "0 imported, 3 unchanged") {
		t.Errorf("a second run of the move: %v\n%s", err, out.String())
	}
}

// A PostgreSQL school is imported into a postgres registry as its record
// only (no store: the registry places it in its database, where its rows
// are found by issuer); its DSN and key secret, placeholders replaced,
// must be the registry's. A second run changes nothing.
func TestImportPostgres(t *testing.T) {
	dsn := pgcluster.Database(t)
	t.Setenv("IMPORT_TEST_DSN", dsn)
	path := filepath.Join(t.TempDir(), "Caddyfile")
	cfg := `{
	admin off
}
http://127.0.0.1:18091 {
	school_gateway http://127.0.0.1:9 {
		store postgres {env.IMPORT_TEST_DSN} {
			key_secret k
		}
	}
}
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var out bytes.Buffer
	if err := importer.Run(ctx, &out, operator.ImportOptions{Caddyfile: path, Kind: "postgres", Target: dsn, KeySecret: "other"}); err == nil ||
		!strings.Contains(out.String(), "key_secret") {
		t.Errorf("an import with another key secret: %v\n%s", err, out.String())
	}
	for run, want := range []string{"1 imported", "0 imported, 1 unchanged"} {
		out.Reset()
		if err := importer.Run(ctx, &out, operator.ImportOptions{Caddyfile: path, Kind: "postgres", Target: dsn, KeySecret: "k"}); err != nil ||
			!strings.Contains(out.String(), want) {
			t.Fatalf("run %d: %v\n%s", run+1, err, out.String())
		}
	}
	pool, err := pgstore.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	reg, err := pgstore.OpenRegistry(ctx, pool, validatePostgresRecord)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	rec, err := reg.Get(ctx, "http://127.0.0.1:18091")
	if err != nil || string(rec.Config) != `{"upstream":"http://127.0.0.1:9"}` || rec.Version != 1 {
		t.Errorf("the record: %+v %v", rec, err)
	}
}

// The blocks a record cannot express are refused with why: a gateway
// under a matcher, a wildcard address, two blocks of one school.
func TestImportRefusals(t *testing.T) {
	for _, tt := range []struct{ name, blocks, want string }{
		{"a matcher", "http://127.0.0.1:18101 {\n\thandle /app/* {\n\t\tschool_gateway http://127.0.0.1:9\n\t}\n}\n", "part of the site"},
		{"a wildcard", "http://*.a.test:18102 {\n\tschool_gateway http://127.0.0.1:9 {\n\t\tissuer http://x.a.test:18102\n\t}\n}\n", "not one host"},
		{"two blocks", "http://127.0.0.1:18103 {\n\tschool_gateway http://127.0.0.1:9\n}\n" +
			"http://localhost:18104 {\n\tschool_gateway http://127.0.0.1:9 {\n\t\tissuer http://127.0.0.1:18103\n\t}\n}\n", "two site blocks"},
		{"other handlers", "http://127.0.0.1:18105 {\n\theader X-A b\n\tschool_gateway http://127.0.0.1:9\n}\n", "headers"},
	} {
		path := filepath.Join(t.TempDir(), "Caddyfile")
		if err := os.WriteFile(path, []byte("{\n\tadmin off\n}\n"+tt.blocks), 0o600); err != nil {
			t.Fatal(err)
		}
		schools, err := readSiteBlocks(path)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var errs []string
		for _, s := range schools {
			if s.Err != nil {
				errs = append(errs, s.Name+": "+s.Err.Error())
			}
		}
		if len(errs) == 0 || !strings.Contains(strings.Join(errs, "; "), tt.want) {
			t.Errorf("%s: %q, want a refusal with %q", tt.name, errs, tt.want)
		}
	}
}
