package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/school"
)

// validateCaddyfile does what caddy validate (and caddy adapt --validate)
// does with a Caddyfile: adapts it and provisions the config without
// starting it, then cleans it up.
func validateCaddyfile(t *testing.T, caddyfile string) error {
	t.Helper()
	raw, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), nil)
	if err != nil {
		return fmt.Errorf("adapt: %v", err)
	}
	var cfg *caddy.Config
	if err := caddy.StrictUnmarshalJSON(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	return caddy.Validate(cfg)
}

// entries lists what is under dir, "" for a dir that does not exist.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err == nil && path != dir {
			out = append(out, path)
		}
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// userTables counts the tables of the database at dsn outside PostgreSQL's
// own schemas.
func userTables(t *testing.T, dsn string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_catalog.pg_tables
		WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// caddy validate checks a configuration and leaves the schools' data as
// it was: no data directory made, no key created, no migration applied to
// a database, for a school on Caddy's default data directory, one with a
// data option and one in PostgreSQL. What is wrong in the configuration
// itself (two schools on one data directory, an admin OpenAPI file that
// does not parse) still fails it, and still leaves nothing.
func TestValidateOpensNothing(t *testing.T) {
	home, data := t.TempDir(), t.TempDir()
	t.Setenv("XDG_DATA_HOME", home)
	badOpenAPI := filepath.Join(data, "openapi31.json")
	if err := os.WriteFile(badOpenAPI, []byte(`{"openapi":"3.1.0","paths":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	block := func(port int, options string) string {
		return fmt.Sprintf("http://127.0.0.1:%d {\n\tschool_gateway http://127.0.0.1:9 {\n%s\n\t}\n}\n", port, options)
	}
	good := "{\n\tadmin off\n}\n" + block(9101, "") + block(9102, "\t\tdata "+filepath.Join(data, "school"))
	var dsn string
	if !testing.Short() {
		dsn = pgcluster.Database(t)
		good += block(9103, fmt.Sprintf("\t\tstore postgres %q {\n\t\t\tkey_secret k\n\t\t}", dsn))
		if n := userTables(t, dsn); n != 0 {
			t.Fatalf("the new database has %d tables", n)
		}
	}
	for _, tt := range []struct {
		name, caddyfile, wantErr string
	}{
		{"valid", good, ""},
		{"one data directory twice", good + block(9104, "\t\tdata "+filepath.Join(data, "school")), "each school needs its own data directory"},
		{"bad admin OpenAPI file", good + block(9105, "\t\tadmin_openapi "+badOpenAPI), "3.0.x"},
	} {
		err := validateCaddyfile(t, tt.caddyfile)
		if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.wantErr)
		}
		if got := entries(t, home); len(got) != 0 {
			t.Errorf("%s: validate made %v", tt.name, got)
		}
		if got := entries(t, filepath.Join(data, "school")); len(got) != 0 {
			t.Errorf("%s: validate made %v", tt.name, got)
		}
		if dsn != "" {
			if n := userTables(t, dsn); n != 0 {
				t.Errorf("%s: validate left %d tables in the database", tt.name, n)
			}
		}
	}
}

// watchedContext tells when the request is waiting on it.
type watchedContext struct {
	context.Context
	asked chan struct{}
	once  sync.Once
}

func watch(ctx context.Context) *watchedContext {
	return &watchedContext{Context: ctx, asked: make(chan struct{})}
}

func (c *watchedContext) Done() <-chan struct{} {
	c.once.Do(func() { close(c.asked) })
	return c.Context.Done()
}

// provisioned provisions a gateway on data in a config that is not
// started, as Caddy does before it starts the config's apps.
func provisioned(t *testing.T, data string) (*Gateway, *App) {
	t.Helper()
	ctx, err := caddy.ProvisionContext(&caddy.Config{AppsRaw: caddy.ModuleMap{appName: json.RawMessage(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	app, err := ctx.App(appName)
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{Options: school.Options{Upstream: "http://127.0.0.1:9", Issuer: "https://school.example"}, Data: data}
	if err := g.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Cleanup(); err != nil {
			t.Error(err)
		}
	})
	return g, app.(*App)
}

// serveAsync serves r on g and hands over the answer.
func serveAsync(g *Gateway, r *http.Request) <-chan *httptest.ResponseRecorder {
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		if err := g.ServeHTTP(rec, r, &recordingNext{}); err != nil {
			rec.Code = 0
		}
		done <- rec
	}()
	return done
}

// Caddy starts the apps of a config in map order, so the http app may
// serve before the App's Start has built the schools. A request that
// arrives then waits for its school and is served; one whose context ends
// first, or whose config ends without starting, is answered 503 with
// Retry-After. Until Start, nothing of the school is on disk.
func TestRequestBeforeStart(t *testing.T) {
	const discovery = "/.well-known/oauth-authorization-server"
	t.Run("served once started", func(t *testing.T) {
		data := t.TempDir()
		g, app := provisioned(t, data)
		ctx := watch(context.Background())
		done := serveAsync(g, httptest.NewRequest("GET", discovery, nil).WithContext(ctx))
		<-ctx.asked // the request waits
		if got := entries(t, data); len(got) != 0 {
			t.Fatalf("the school was built before Start: %v", got)
		}
		if err := app.Start(); err != nil {
			t.Fatal(err)
		}
		rec := <-done
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"issuer":"https://school.example"`) {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	})
	t.Run("gave up", func(t *testing.T) {
		g, _ := provisioned(t, t.TempDir())
		ctx, cancel := context.WithCancel(context.Background())
		watched := watch(ctx)
		done := serveAsync(g, httptest.NewRequest("GET", discovery, nil).WithContext(watched))
		<-watched.asked
		cancel()
		checkStarting(t, <-done)
	})
	t.Run("config ended unstarted", func(t *testing.T) {
		g, _ := provisioned(t, t.TempDir())
		ctx := watch(context.Background())
		done := serveAsync(g, httptest.NewRequest("GET", discovery, nil).WithContext(ctx))
		<-ctx.asked
		if err := g.Cleanup(); err != nil {
			t.Fatal(err)
		}
		checkStarting(t, <-done)
	})
}

func checkStarting(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	var body map[string]string
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" ||
		json.Unmarshal(rec.Body.Bytes(), &body) != nil || body["error"] != "temporarily_unavailable" {
		t.Errorf("%d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}
