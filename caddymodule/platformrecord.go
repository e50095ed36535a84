package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/registry"
)

// A registry's record is a school: its Config is the school_gateway
// handler's JSON, read and checked by the same code as a site block's, so
// that a record is refused when it is written, with the message the
// directive gives. Where the school keeps its state is the registry's
// decision (placement), not the record's.

// recordGateway reads a record's configuration as a school_gateway
// handler of the record's issuer, with its defaults set, and checks it.
// A record does not choose its store: the registry does (placement).
func recordGateway(r *registry.Record) (*Gateway, error) {
	g := new(Gateway)
	if err := caddy.StrictUnmarshalJSON(r.Config, g); err != nil {
		return nil, optionError(r.Config, err)
	}
	if g.Issuer != "" {
		issuer, err := policy.ParseOrigin(g.Issuer)
		if err != nil {
			return nil, fmt.Errorf("issuer: %v", err)
		}
		if issuer != r.Issuer {
			return nil, fmt.Errorf("issuer: the configuration names %s, the record is %s; leave issuer out, the record's is the school's", issuer, r.Issuer)
		}
	}
	if g.Store != nil {
		return nil, errors.New("store: a school of a platform keeps its state where the registry says; remove store")
	}
	g.Issuer = r.Issuer
	g.SetDefaults()
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return g, nil
}

// validateDirRecord is the Validator of a registry dir: the school_gateway
// rules, and data may set where the school's bbolt file is.
func validateDirRecord(r *registry.Record) error {
	_, err := recordGateway(r)
	return err
}

// validatePostgresRecord is the Validator of a registry postgres: the
// school_gateway rules, and the school is kept in the registry's
// database.
func validatePostgresRecord(r *registry.Record) error {
	g, err := recordGateway(r)
	if err == nil && g.Data != "" {
		err = errors.New("data: a school of a postgres registry keeps its state in the registry's database; remove data")
	}
	return err
}

// placement puts a school's state where its registry keeps it: it sets
// the Gateway's Data or Store.
type placement func(g *Gateway) error

// placeInDir keeps a school's bbolt file in the registry's directory for
// it (dataDir), unless its record sets data.
func placeInDir(dataDir func(issuer string) string) placement {
	return func(g *Gateway) error {
		if g.Data == "" {
			g.Data = dataDir(g.Issuer)
		}
		return nil
	}
}

// placeInPostgres keeps a school in the registry's database, sealed with
// the registry's key secret.
func placeInPostgres(pg *PostgresStore) placement {
	return func(g *Gateway) error {
		if g.Data != "" {
			return errors.New("data: a school of a postgres registry keeps its state in the registry's database; remove data")
		}
		g.Store = &StoreConfig{Postgres: &PostgresStore{DSN: pg.DSN, KeySecret: pg.KeySecret}}
		return nil
	}
}

// optionError is a configuration's refusal naming the option refused: a
// value's own decoder (a duration's) does not say whose value it read.
// Each option is read alone once more, on a refusal only; the first
// refused, in the options' order by name, is named.
func optionError(cfg json.RawMessage, err error) error {
	var obj map[string]json.RawMessage
	if json.Unmarshal(cfg, &obj) != nil {
		return fmt.Errorf("config: %v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		one, _ := json.Marshal(map[string]json.RawMessage{name: obj[name]})
		oneErr := caddy.StrictUnmarshalJSON(one, new(Gateway))
		switch {
		case oneErr == nil:
			continue
		case strings.Contains(oneErr.Error(), strconv.Quote(name)), strings.HasPrefix(oneErr.Error(), name+":"):
			return fmt.Errorf("config: %v", oneErr) // it names the option already
		}
		return fmt.Errorf("config: %s: %v", name, oneErr)
	}
	return fmt.Errorf("config: %v", err)
}
