package caddymodule

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/school"
	"github.com/schoolgate/schoolgate/store"
	"github.com/schoolgate/schoolgate/storepool"
)

// The store option adapts to JSON with its placeholders kept: the
// password is read from the environment at start, never written into the
// configuration.
func TestStoreAdaptsWithPlaceholders(t *testing.T) {
	cfg := `http://127.0.0.1:8080 {
	school_gateway http://127.0.0.1:9080 {
		store postgres {env.SCHOOLGATE_DATABASE_URL} {
			key_secret {env.SCHOOLGATE_KEY_SECRET}
		}
	}
}
`
	t.Setenv("SCHOOLGATE_DATABASE_URL", "postgres://u:hunter2@db.example/s")
	raw, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	js := string(raw)
	if !strings.Contains(js, `"store":{"postgres":{"dsn":"{env.SCHOOLGATE_DATABASE_URL}","key_secret":"{env.SCHOOLGATE_KEY_SECRET}"}}`) {
		t.Errorf("adapted store = %s", js)
	}
	if strings.Contains(js, "hunter2") {
		t.Error("the password entered the JSON configuration")
	}
}

func TestStoreCaddyfileErrors(t *testing.T) {
	for _, tt := range []struct{ block, want string }{
		{"store", "store: expects a kind"},
		{"store mysql dsn", `store: unknown kind "mysql"; the kinds are: postgres`},
		{"store postgres", "store postgres: expects one DSN"},
		{"store postgres a b", "store postgres: expects one DSN"},
		{"store postgres dsn {\n colour red\n}", `store postgres: unknown option "colour"`},
		{"store postgres dsn {\n key_secret\n}", "key_secret"},
		{"store postgres a {\n key_secret x\n}\n store postgres b {\n key_secret x\n}", "only one store"},
	} {
		d := caddyfile.NewTestDispenser("school_gateway http://127.0.0.1:9 {\n" + tt.block + "\n}")
		d.Next()
		var g Gateway
		err := g.UnmarshalCaddyfile(d)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want mention of %q", tt.block, err, tt.want)
		}
	}
}

// Each kind of store is named alike in the Caddyfile and the JSON: the
// JSON field of the kind's name sets that kind, and no other.
func TestStoreKindsNamedAlike(t *testing.T) {
	for name, kind := range storeKinds {
		var s StoreConfig
		if err := json.Unmarshal([]byte(`{"`+name+`":{}}`), &s); err != nil {
			t.Fatal(err)
		}
		if kind.options(&s) == nil {
			t.Errorf("%s: the JSON field %q does not set the kind", name, name)
		}
		for other, k := range storeKinds {
			if other != name && k.options(&s) != nil {
				t.Errorf("%s: the JSON field %q sets %s too", name, name, other)
			}
		}
	}
}

func TestStoreValidate(t *testing.T) {
	pg := func(dsn, secret string) *StoreConfig {
		return &StoreConfig{Postgres: &PostgresStore{DSN: dsn, KeySecret: secret}}
	}
	for _, tt := range []struct {
		name  string
		data  string
		store *StoreConfig
		want  string
	}{
		{"keyword DSN", "", pg("host=/tmp dbname=s", "k"), ""},
		{"URL DSN", "", pg("postgres://u:p@db.example/s?pool_max_conns=8", "k"), ""},
		{"placeholders checked at start", "", pg("{env.DB}", "{env.SECRET}"), ""},
		{"data and store", "./data", pg("host=/tmp", "k"), "data and store"},
		{"no kind", "", &StoreConfig{}, "store: no kind"},
		{"no DSN", "", pg("", "k"), "store postgres: the DSN is required"},
		{"no key_secret", "", pg("host=/tmp", ""), "key_secret is required"},
		{"bad DSN", "", pg("postgres://u:hunter2@db.example:notaport/s", "k"), "store postgres"},
		{"bad pool size", "", pg("host=/tmp pool_max_conns=many password=hunter2", "k"), "store postgres"},
	} {
		g := Gateway{Options: school.Options{Upstream: "http://127.0.0.1:9080", Issuer: "https://school.example"}, Data: tt.data, Store: tt.store}
		g.SetDefaults()
		err := g.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want mention of %q", tt.name, err, tt.want)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%s: the error shows the password: %v", tt.name, err)
		}
	}
}

// Placeholders are replaced at start; an unset variable is named as the
// likely cause, without the DSN.
func TestStoreResolved(t *testing.T) {
	t.Setenv("SG_TEST_DSN", "host=/tmp dbname=s")
	t.Setenv("SG_TEST_SECRET", "k")
	dsn, secret, err := (&PostgresStore{DSN: "{env.SG_TEST_DSN}", KeySecret: "{env.SG_TEST_SECRET}"}).resolved()
	if err != nil || dsn != "host=/tmp dbname=s" || secret != "k" {
		t.Errorf("resolved = %q, %q, %v", dsn, secret, err)
	}
	_, _, err = (&PostgresStore{DSN: "{env.SG_TEST_UNSET}", KeySecret: "k"}).resolved()
	if err == nil || !strings.Contains(err.Error(), "environment variable") {
		t.Errorf("unset DSN variable: %v", err)
	}
	_, _, err = (&PostgresStore{DSN: "host=/tmp", KeySecret: "{env.SG_TEST_UNSET}"}).resolved()
	if err == nil || !strings.Contains(err.Error(), "key_secret") {
		t.Errorf("unset secret variable: %v", err)
	}
}

// Two schools on one DSN share one pool and keep their own sites; the
// pool closes once neither uses it.
func TestTwoSitesShareOnePool(t *testing.T) {
	dsn := pgcluster.Database(t)
	ctx := context.Background()
	a, err := openPostgres(ctx, &PostgresStore{DSN: dsn, KeySecret: "k"}, "https://a.example")
	if err != nil {
		t.Fatal(err)
	}
	b, err := openPostgres(ctx, &PostgresStore{DSN: dsn, KeySecret: "k"}, "https://b.example")
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := storepool.PostgresHolders(dsn); !ok || n != 2 {
		t.Errorf("pool references = %d, %v; want 2", n, ok)
	}
	if err := a.PutSetting(ctx, "x", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetSetting(ctx, "x"); err == nil {
		t.Error("site b reads site a's setting")
	}
	_ = a.release()
	_ = b.release()
	if _, ok := storepool.PostgresHolders(dsn); ok {
		t.Error("the pool outlived its sites")
	}
}

// A secret that does not open the site's keys fails the start, makes no
// key, and lets go of the pool.
func TestWrongKeySecret(t *testing.T) {
	dsn := pgcluster.Database(t)
	ctx := context.Background()
	a, err := openPostgres(ctx, &PostgresStore{DSN: dsn, KeySecret: "right"}, "https://a.example")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.InitKeys(ctx, store.StoredKey{KID: "k1", JWK: []byte(`{"kty":"EC"}`)}); err != nil {
		t.Fatal(err)
	}
	_ = a.release()
	_, err = openPostgres(ctx, &PostgresStore{DSN: dsn, KeySecret: "wrong"}, "https://a.example")
	if err == nil || !strings.Contains(err.Error(), "store postgres") {
		t.Fatalf("wrong secret: %v", err)
	}
	if _, ok := storepool.PostgresHolders(dsn); ok {
		t.Error("a failed start kept the pool")
	}
}

// refresh_grace 0 (or off) means no window at all, which a zero duration
// cannot say in JSON, where zero is the default.
func TestRefreshGraceZero(t *testing.T) {
	for _, tt := range []struct {
		arg     string
		noGrace bool
		grace   time.Duration
		err     bool
	}{{"0", true, 0, false}, {"off", true, 0, false}, {"3s", false, 3 * time.Second, false}, {"-1s", false, 0, true}} {
		d := caddyfile.NewTestDispenser("school_gateway http://127.0.0.1:9 {\n refresh_grace " + tt.arg + "\n}")
		d.Next()
		var g Gateway
		err := g.UnmarshalCaddyfile(d)
		if (err != nil) != tt.err || g.NoRefreshGrace != tt.noGrace || time.Duration(g.RefreshGrace) != tt.grace {
			t.Errorf("refresh_grace %s: %v, no grace %v, grace %v", tt.arg, err, g.NoRefreshGrace, time.Duration(g.RefreshGrace))
		}
	}
}
