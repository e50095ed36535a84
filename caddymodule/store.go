package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/pgstore"
	"github.com/schoolgate/schoolgate/store"
)

// StoreConfig keeps a site somewhere other than a bbolt file under Data,
// so that several Caddy instances can serve it as one. Exactly one kind is
// set.
type StoreConfig struct {
	// Postgres keeps the site in a PostgreSQL database that every
	// instance of the site shares.
	Postgres *PostgresStore `json:"postgres,omitempty"`
}

// PostgresStore is a site's PostgreSQL database.
type PostgresStore struct {
	// DSN is pgx's keyword form (host=… user=… dbname=…) or URL form
	// (postgres://…), pool settings included; without pool_max_conns a
	// pool has 16 connections. {env.NAME} placeholders are replaced when
	// the site starts, so a password given that way never appears in the
	// configuration Caddy's admin API serves. Sites naming the same DSN
	// share one pool. Required.
	DSN string `json:"dsn"`
	// KeySecret encrypts the site's private signing keys in the database;
	// every instance of the site needs the same one. {env.NAME}
	// placeholders are replaced when the site starts. Required.
	KeySecret string `json:"key_secret"`
}

// storeKinds are the kinds of store the store option names, by the name
// the Caddyfile gives them, which is also their field's JSON name in
// StoreConfig. A site that names none keeps a bbolt file under Data.
// Another kind is its package, its options (a type implementing
// storeOptions and a field of StoreConfig), and an entry here.
var storeKinds = map[string]storeKind{
	"postgres": {func(s *StoreConfig) storeOptions { return optionsOf(s.Postgres) }, unmarshalPostgres},
}

// storeKind is how a kind of store is configured.
type storeKind struct {
	// options returns the kind's options in s, nil when s sets another.
	options func(s *StoreConfig) storeOptions
	// unmarshal reads the kind's arguments, those after its name, and
	// its block.
	unmarshal func(d *caddyfile.Dispenser, args []string) (*StoreConfig, error)
}

// storeOptions are the options of one kind of store.
type storeOptions interface {
	// validate checks the options without reaching the store.
	validate() error
	// open opens the issuer's site in the store.
	open(ctx context.Context, issuer string) (*siteStore, error)
	// loadUsage reads the issuer's usage without opening its site.
	loadUsage(ctx context.Context, issuer string) (*store.Usage, error)
	// readRows reads the issuer's rows without opening its site: what
	// the doctor reads of a platform's school that is not built; the
	// caller calls release when done.
	readRows(ctx context.Context, issuer string) (rows authserver.DoctorSource, release func(), err error)
}

// optionsOf is p as storeOptions: nil when p is nil, not an interface
// holding a nil pointer.
func optionsOf[P interface {
	*T
	storeOptions
}, T any](p P) storeOptions {
	if p == nil {
		return nil
	}
	return p
}

// storeKindNames lists the kinds, for messages.
func storeKindNames() string { return strings.Join(slices.Sorted(maps.Keys(storeKinds)), ", ") }

// options returns the options of the kind s sets, nil when it sets none.
func (s *StoreConfig) options() storeOptions {
	if s == nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(storeKinds)) {
		if o := storeKinds[name].options(s); o != nil {
			return o
		}
	}
	return nil
}

// unmarshalStore reads
//
//	store <kind> <args> {
//		<options>
//	}
func (g *Gateway) unmarshalStore(d *caddyfile.Dispenser) error {
	if g.Store != nil {
		return d.Err("store: only one store")
	}
	args := d.RemainingArgs()
	if len(args) == 0 {
		return d.Err("store: expects a kind: store postgres <dsn> { key_secret <secret> }")
	}
	kind, ok := storeKinds[args[0]]
	if !ok {
		return d.Errf("store: unknown kind %q; the kinds are: %s", args[0], storeKindNames())
	}
	s, err := kind.unmarshal(d, args[1:])
	if err != nil {
		return err
	}
	g.Store = s
	return nil
}

// unmarshalPostgres reads
//
//	store postgres <dsn> {
//		key_secret <secret>
//	}
func unmarshalPostgres(d *caddyfile.Dispenser, args []string) (*StoreConfig, error) {
	pg, err := parsePostgres(d, args, "store postgres")
	if err != nil {
		return nil, err
	}
	return &StoreConfig{Postgres: pg}, nil
}

// parsePostgres reads a database's DSN, given as args, and its block of
// options, naming option (store postgres, registry postgres) in its
// messages.
func parsePostgres(d *caddyfile.Dispenser, args []string, option string) (*PostgresStore, error) {
	if len(args) != 1 {
		return nil, d.Errf("%s: expects one DSN: %s <dsn> { key_secret <secret> }", option, option)
	}
	pg := &PostgresStore{DSN: args[0]}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		if d.Val() != "key_secret" {
			return nil, d.Errf("%s: unknown option %q", option, d.Val())
		}
		if err := oneArg(d, option+" key_secret", &pg.KeySecret); err != nil {
			return nil, err
		}
	}
	return pg, nil
}

// validateStore checks the store's options without reaching the store.
func (g *Gateway) validateStore() error {
	if g.Store == nil {
		return nil
	}
	if g.Data != "" {
		return errors.New("data and store: a site keeps its state in one place; remove data to use the store, or store to keep the bbolt file")
	}
	opts := g.Store.options()
	if opts == nil {
		return errors.New("store: no kind is set; the kinds are: " + storeKindNames())
	}
	return opts.validate()
}

// validate checks the DSN and the key secret without reaching the
// database.
func (pg *PostgresStore) validate() error { return pg.check("store postgres") }

// check checks the DSN and the key secret without reaching the database,
// naming option in its messages. A DSN with placeholders is checked once
// they are replaced, at start.
func (pg *PostgresStore) check(option string) error {
	switch {
	case pg.DSN == "":
		return fmt.Errorf("%s: the DSN is required", option)
	case pg.KeySecret == "":
		return fmt.Errorf("%s: key_secret is required; it encrypts the signing keys in the database", option)
	}
	if !strings.Contains(pg.DSN, "{") {
		if _, err := pgstore.ParseDSN(pg.DSN); err != nil {
			return fmt.Errorf("%s: %v", option, err)
		}
	}
	return nil
}

// resolved returns the DSN and key secret with {env.NAME} replaced.
func (pg *PostgresStore) resolved() (dsn, secret string, err error) {
	return pg.resolvedAs("store postgres")
}

// resolvedAs is resolved naming option in its messages.
func (pg *PostgresStore) resolvedAs(option string) (dsn, secret string, err error) {
	repl := caddy.NewReplacer()
	dsn, secret = repl.ReplaceKnown(pg.DSN, ""), repl.ReplaceKnown(pg.KeySecret, "")
	if dsn == "" {
		return "", "", fmt.Errorf("%s: the DSN is empty once its placeholders are replaced (is the environment variable set?)", option)
	}
	if secret == "" {
		return "", "", fmt.Errorf("%s: key_secret is empty once its placeholders are replaced (is the environment variable set?)", option)
	}
	if _, err := pgstore.ParseDSN(dsn); err != nil {
		return "", "", fmt.Errorf("%s: %v", option, err)
	}
	return dsn, secret, nil
}
