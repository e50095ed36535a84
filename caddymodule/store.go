package caddymodule

import (
	"errors"
	"fmt"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/schoolgate/schoolgate/pgstore"
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

// unmarshalStore reads
//
//	store postgres <dsn> {
//		key_secret <secret>
//	}
func (g *Gateway) unmarshalStore(d *caddyfile.Dispenser) error {
	if g.Store != nil {
		return d.Err("store: only one store")
	}
	args := d.RemainingArgs()
	if len(args) == 0 {
		return d.Err("store: expects a kind: store postgres <dsn> { key_secret <secret> }")
	}
	if args[0] != "postgres" {
		return d.Errf("store: unknown kind %q; the kinds are: postgres", args[0])
	}
	if len(args) != 2 {
		return d.Err("store postgres: expects one DSN: store postgres <dsn> { key_secret <secret> }")
	}
	pg := &PostgresStore{DSN: args[1]}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		if d.Val() != "key_secret" {
			return d.Errf("store postgres: unknown option %q", d.Val())
		}
		if err := oneArg(d, "store postgres key_secret", &pg.KeySecret); err != nil {
			return err
		}
	}
	g.Store = &StoreConfig{Postgres: pg}
	return nil
}

// validateStore checks the store's options without reaching the database.
// A DSN with placeholders is checked once they are replaced, at start.
func (g *Gateway) validateStore() error {
	if g.Store == nil {
		return nil
	}
	if g.Data != "" {
		return errors.New("data and store: a site keeps its state in one place; remove data to use the store, or store to keep the bbolt file")
	}
	pg := g.Store.Postgres
	switch {
	case pg == nil:
		return errors.New("store: no kind is set; the kinds are: postgres")
	case pg.DSN == "":
		return errors.New("store postgres: the DSN is required")
	case pg.KeySecret == "":
		return errors.New("store postgres: key_secret is required; it encrypts the signing keys in the database")
	}
	if !strings.Contains(pg.DSN, "{") {
		if _, err := pgstore.ParseDSN(pg.DSN); err != nil {
			return fmt.Errorf("store postgres: %v", err)
		}
	}
	return nil
}

// resolved returns the DSN and key secret with {env.NAME} replaced.
func (pg *PostgresStore) resolved() (dsn, secret string, err error) {
	repl := caddy.NewReplacer()
	dsn, secret = repl.ReplaceKnown(pg.DSN, ""), repl.ReplaceKnown(pg.KeySecret, "")
	if dsn == "" {
		return "", "", errors.New("store postgres: the DSN is empty once its placeholders are replaced (is the environment variable set?)")
	}
	if secret == "" {
		return "", "", errors.New("store postgres: key_secret is empty once its placeholders are replaced (is the environment variable set?)")
	}
	if _, err := pgstore.ParseDSN(dsn); err != nil {
		return "", "", fmt.Errorf("store postgres: %v", err)
	}
	return dsn, secret, nil
}
