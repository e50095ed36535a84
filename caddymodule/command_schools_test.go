package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/schoolgate/schoolgate/adminapi"
	"github.com/schoolgate/schoolgate/registry"
)

// runSchools runs `caddy schoolgate schools <args>` and returns its output.
func runSchools(t *testing.T, address string, args ...string) (string, error) {
	t.Helper()
	cmd := schoolsCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	if address != "" && len(args) > 0 && args[0] != "import" {
		args = append(args, "--address", address)
	}
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// writeFile writes a file in a temporary directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sameJSONText reports whether two JSON texts are the same value.
func sameJSONText(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// The schools commands write and read a platform's registry through
// Caddy's admin server: add refuses a school the registry has, saying to
// use set; set changes what its flags name and keeps the rest; list
// prints a table, show the record, remove removes it; a refusal is an
// error of the API's message in plain words.
func TestSchoolsCommands(t *testing.T) {
	tp := newTestPlatform(t, 10)
	runningAs(t, tp.app)
	addr := runAdminServer(t)
	cfgFile := writeFile(t, "school.json", `{"upstream":"http://127.0.0.1:1","code_ttl":"30s"}`)

	if out, err := runSchools(t, addr, "add", "https://a.example", "--upstream", "http://127.0.0.1:9",
		"--host", "www.a.example", "--config", cfgFile, "--option", "weight=3"); err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	rec := tp.school("https://a.example").rec
	if !sameJSONText(t, string(rec.Config), `{"upstream":"http://127.0.0.1:9","code_ttl":"30s","weight":3}`) ||
		len(rec.Hosts) != 1 || rec.Hosts[0] != "www.a.example" {
		t.Errorf("added: %+v %s (the flag's upstream wins, the file's options and --option stay)", rec, rec.Config)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "https://A.example", "--upstream", "http://127.0.0.1:9"},
			"https://A.example is in the registry already (version 1): change it with caddy schoolgate schools set https://A.example"},
		{[]string{"add", "https://b.example"}, "--upstream is required"},
		{[]string{"add", "https://b.example", "--upstream", "http://127.0.0.1:9", "--host", "WWW.A.EXAMPLE"},
			"hosts: www.a.example is a host of https://a.example already (HTTP 409)"},
		{[]string{"add", "https://b.example", "--upstream", "ftp://x"}, `upstream: "ftp://x" must start with http:// or https:// (HTTP 400)`},
		{[]string{"add", "https://b.example", "--config", "/nonexistent.json"}, "--config"},
		{[]string{"set", "https://z.example", "--upstream", "http://127.0.0.1:9"}, "no school with issuer https://z.example in the registry"},
		{[]string{"set", "https://a.example", "--disable", "--enable"}, "say one"},
		{[]string{"remove", "https://z.example"}, "no school with issuer https://z.example in the registry"},
		{[]string{"show", "https://z.example"}, "(HTTP 404)"},
		{[]string{"show", "https://a.example", "--platform", "postgres"}, `platform: no platform is "postgres"`},
	} {
		out, err := runSchools(t, addr, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), `{"`) {
			t.Errorf("%v: %v\n%s, want an error with %q, no JSON", tt.args, err, out, tt.want)
		}
	}
	if _, err := runSchools(t, addr, "add", "https://b.example", "--upstream", "http://127.0.0.1:9"); err != nil {
		t.Fatal(err)
	}

	if out, err := runSchools(t, addr, "set", "https://a.example", "--disable", "--upstream", "http://127.0.0.1:7"); err != nil {
		t.Fatalf("set: %v\n%s", err, out)
	}
	rec = tp.school("https://a.example").rec
	if !rec.Disabled || rec.Version != 2 || !strings.Contains(string(rec.Config), "127.0.0.1:7") ||
		!strings.Contains(string(rec.Config), "code_ttl") || len(rec.Hosts) != 1 {
		t.Errorf("set: %+v %s, want disabled, the new upstream, the options and hosts kept", rec, rec.Config)
	}
	if _, err := runSchools(t, addr, "set", "https://a.example", "--enable", "--no-hosts"); err != nil {
		t.Fatal(err)
	}
	if rec = tp.school("https://a.example").rec; rec.Disabled || len(rec.Hosts) != 0 {
		t.Errorf("set --enable --no-hosts: %+v", rec)
	}

	out, err := runSchools(t, addr, "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 3 || !strings.HasPrefix(lines[0], "ISSUER") ||
		!strings.HasPrefix(lines[1], "https://a.example") || !strings.Contains(lines[1], "idle") ||
		!strings.Contains(lines[1], " 3 ") || !strings.HasPrefix(lines[2], "https://b.example") {
		t.Errorf("list: %v\n%s", err, out)
	}
	out, err = runSchools(t, addr, "show", "https://A.example")
	var shown adminapi.SchoolView
	if err != nil || json.Unmarshal([]byte(out), &shown) != nil || shown.Version != 3 || !strings.Contains(string(shown.Config), "code_ttl") {
		t.Errorf("show: %v\n%s", err, out)
	}
	if out, err := runSchools(t, addr, "remove", "https://a.example"); err != nil {
		t.Fatalf("remove: %v\n%s", err, out)
	}
	if tp.school("https://a.example") != nil {
		t.Error("the school removed is still served")
	}
}

// set changes the options its flags name and nothing else: --option
// (values JSON when they read as JSON, else strings; a.b inside an
// object), --unset, and --config as a JSON merge patch (RFC 7396), null
// removing an option. What the registry's validator refuses is refused
// naming the option, and nothing is written; so is a change that changes
// nothing.
func TestSchoolsSetOptions(t *testing.T) {
	tp := newTestPlatform(t, 10)
	runningAs(t, tp.app)
	addr := runAdminServer(t)
	const issuer = "https://a.example"
	const base = `{"upstream":"http://127.0.0.1:9","catalog":"http://127.0.0.1:9/catalog.json",` +
		`"budget":{"requests":{"events":100,"period":60000000000}},"code_ttl":"30s"}`
	patch := writeFile(t, "patch.json", `{"code_ttl":"1m","catalog":null,"budget":{"legacy_concurrency":4}}`)
	noUpstream := writeFile(t, "partial.json", `{"language":"de"}`)
	notObject := writeFile(t, "list.json", `["code_ttl"]`)
	for _, tt := range []struct {
		name string
		args []string
		// want is the options after, or err what the refusal says
		// (nothing is written then).
		want, err string
	}{
		{name: "a string", args: []string{"--option", "code_ttl=2m"},
			want: `{"upstream":"http://127.0.0.1:9","catalog":"http://127.0.0.1:9/catalog.json","budget":{"requests":{"events":100,"period":60000000000}},"code_ttl":"2m"}`},
		{name: "a number and a bool", args: []string{"--option", "weight=5", "--option", "mcp_connections=true"},
			want: `{"upstream":"http://127.0.0.1:9","catalog":"http://127.0.0.1:9/catalog.json","budget":{"requests":{"events":100,"period":60000000000}},"code_ttl":"30s","weight":5,"mcp_connections":true}`},
		{name: "inside an object", args: []string{"--option", "budget.legacy_concurrency=4"},
			want: `{"upstream":"http://127.0.0.1:9","catalog":"http://127.0.0.1:9/catalog.json","budget":{"requests":{"events":100,"period":60000000000},"legacy_concurrency":4},"code_ttl":"30s"}`},
		{name: "an object replacing its members", args: []string{"--option", `budget.requests={"events":5,"period":"1s"}`},
			want: `{"upstream":"http://127.0.0.1:9","catalog":"http://127.0.0.1:9/catalog.json","budget":{"requests":{"events":5,"period":"1s"}},"code_ttl":"30s"}`},
		{name: "a quoted string", args: []string{"--option", `language="de"`},
			want: `{"upstream":"http://127.0.0.1:9","catalog":"http://127.0.0.1:9/catalog.json","budget":{"requests":{"events":100,"period":60000000000}},"code_ttl":"30s","language":"de"}`},
		{name: "unset", args: []string{"--unset", "catalog", "--unset", "budget.requests"},
			want: `{"upstream":"http://127.0.0.1:9","budget":{},"code_ttl":"30s"}`},
		{name: "null removes", args: []string{"--option", "catalog=null"},
			want: `{"upstream":"http://127.0.0.1:9","budget":{"requests":{"events":100,"period":60000000000}},"code_ttl":"30s"}`},
		{name: "a merge patch", args: []string{"--config", patch},
			want: `{"upstream":"http://127.0.0.1:9","budget":{"requests":{"events":100,"period":60000000000},"legacy_concurrency":4},"code_ttl":"1m"}`},
		{name: "a patch without upstream keeps it", args: []string{"--config", noUpstream},
			want: `{"upstream":"http://127.0.0.1:9","catalog":"http://127.0.0.1:9/catalog.json","budget":{"requests":{"events":100,"period":60000000000}},"code_ttl":"30s","language":"de"}`},
		{name: "the patch, then the options, then upstream", args: []string{"--config", patch, "--option", "code_ttl=5m", "--upstream", "http://127.0.0.1:8"},
			want: `{"upstream":"http://127.0.0.1:8","budget":{"requests":{"events":100,"period":60000000000},"legacy_concurrency":4},"code_ttl":"5m"}`},
		{name: "a bad value names its option", args: []string{"--option", "code_ttl=soon"}, err: `config: code_ttl: time: invalid duration "soon" (HTTP 400)`},
		{name: "a bad type names its option", args: []string{"--option", "weight=heavy"}, err: "config: weight: json: cannot unmarshal string"},
		{name: "an unknown option", args: []string{"--option", "colour=red"}, err: `config: json: unknown field "colour" (HTTP 400)`},
		{name: "the validator's own rules", args: []string{"--unset", "upstream"}, err: "upstream: is required (HTTP 400)"},
		{name: "no value", args: []string{"--option", "code_ttl="}, err: "--option code_ttl=: give a value, or remove the option with --unset code_ttl"},
		{name: "no =", args: []string{"--option", "code_ttl"}, err: "write name=value"},
		{name: "an empty name", args: []string{"--option", "budget..x=1"}, err: "name an option"},
		{name: "an option twice", args: []string{"--option", "budget.legacy_concurrency=2", "--unset", "budget"}, err: "budget.legacy_concurrency and budget are changed both"},
		{name: "a patch that is no object", args: []string{"--config", notObject}, err: "is not a JSON object"},
		{name: "nothing named", args: nil, err: "name what to change"},
		{name: "nothing changes", args: []string{"--option", "code_ttl=30s"}, err: "https://a.example has this already (version 1): nothing was written"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_ = tp.reg.Remove(context.Background(), issuer)
			if _, err := tp.reg.Put(context.Background(), registry.Record{Issuer: issuer, Config: json.RawMessage(base)}); err != nil {
				t.Fatal(err)
			}
			out, err := runSchools(t, addr, append([]string{"set", issuer}, tt.args...)...)
			rec, getErr := tp.reg.Get(context.Background(), issuer)
			if getErr != nil {
				t.Fatal(getErr)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("%v\n%s, want an error with %q", err, out, tt.err)
				}
				if rec.Version != 1 {
					t.Errorf("refused, but written: version %d %s", rec.Version, rec.Config)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if rec.Version != 2 || !sameJSONText(t, string(rec.Config), tt.want) {
				t.Errorf("version %d\n%s, want\n%s", rec.Version, rec.Config, tt.want)
			}
		})
	}
}

// racingRegistry is a platform's registry in which another writer changes
// a record between a set's read and its write, for the first races
// writes.
type racingRegistry struct {
	*flakyRegistry
	races atomic.Int32
	race  func()
}

func (r *racingRegistry) PutIf(ctx context.Context, rec registry.Record, version int64) (registry.Record, error) {
	if r.races.Add(-1) >= 0 {
		r.race()
	}
	return r.flakyRegistry.PutIf(ctx, rec, version)
}

// Two operators changing one school lose neither change: set writes on
// condition of the version it read, and when another writer changed the
// record meanwhile it makes its change again on the record as it is now;
// past three such races it gives up, saying so, having written nothing.
func TestSchoolsSetConcurrent(t *testing.T) {
	var racing *racingRegistry
	tp := newTestPlatform(t, 10, func(tp *testPlatform) {
		racing = &racingRegistry{flakyRegistry: tp.flaky}
		tp.open = func(context.Context) (*openedRegistry, error) {
			return &openedRegistry{Registry: racing, place: placeInDir(tp.dataDir), release: func() error { return nil }}, nil
		}
	})
	runningAs(t, tp.app)
	addr := runAdminServer(t)
	const issuer = "https://a.example"
	tp.put(t, issuer, nil, `,"code_ttl":"30s"`)
	// The other operator sets a further weight each time, or removes
	// the school.
	others := 0
	change := func() {
		rec, err := tp.reg.Get(context.Background(), issuer)
		if err != nil {
			t.Error(err)
			return
		}
		var cfg map[string]any
		_ = json.Unmarshal(rec.Config, &cfg)
		others++
		cfg["weight"] = others
		rec.Config, _ = json.Marshal(cfg)
		if _, err := tp.reg.Put(context.Background(), rec); err != nil {
			t.Error(err)
		}
	}
	remove := func() {
		if err := tp.reg.Remove(context.Background(), issuer); err != nil {
			t.Error(err)
		}
	}

	for _, tt := range []struct {
		name  string
		race  func()
		races int32
		// version is the record's after; err what the refusal says.
		version int64
		want    string
		err     string
	}{
		{name: "none", race: change, races: 0, version: 2, want: `{"upstream":"http://127.0.0.1:9","code_ttl":"1m"}`},
		{name: "one", race: change, races: 1, version: 4, want: `{"upstream":"http://127.0.0.1:9","code_ttl":"2m","weight":1}`},
		{name: "two", race: change, races: 2, version: 7, want: `{"upstream":"http://127.0.0.1:9","code_ttl":"3m","weight":3}`},
		{name: "every time", race: change, races: 3 /* operator.setTries */, version: 10, want: `{"upstream":"http://127.0.0.1:9","code_ttl":"3m","weight":6}`,
			err: "https://a.example was changed by another writer each of the 3 times this change was made on it (now version 10): nothing of this change was written"},
		{name: "removed", race: remove, races: 1,
			err: "https://a.example was removed from the registry while this change was made: nothing was written"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			racing.race = tt.race
			racing.races.Store(tt.races)
			ttl := map[string]string{"none": "1m", "one": "2m", "two": "3m", "every time": "4m", "removed": "5m"}[tt.name]
			out, err := runSchools(t, addr, "set", issuer, "--option", "code_ttl="+ttl)
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("%v\n%s, want an error with %q", err, out, tt.err)
			case tt.err == "" && err != nil:
				t.Fatalf("%v\n%s", err, out)
			}
			rec, err := tp.reg.Get(context.Background(), issuer)
			if tt.version == 0 {
				if err == nil {
					t.Errorf("the record removed meanwhile is there again: %+v", rec)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.Version != tt.version || !sameJSONText(t, string(rec.Config), tt.want) {
				t.Errorf("version %d %s, want %d %s", rec.Version, rec.Config, tt.version, tt.want)
			}
		})
	}
}
