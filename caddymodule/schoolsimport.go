package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/spf13/cobra"

	"github.com/schoolgate/schoolgate/operator"
	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/school"
)

// `caddy schoolgate schools import` (package operator's Importer) with
// what needs Caddy: reading a Caddyfile's site blocks through the
// caddyfile adapter's JSON, each site block's school_gateway handler and
// addresses, the record each becomes, and the platform's Validators.

// importer is the import as this adapter reads Caddyfiles and checks
// records.
var importer = operator.Importer{
	ReadSiteBlocks:   readSiteBlocks,
	ValidateDir:      validateDirRecord,
	ValidatePostgres: validatePostgresRecord,
}

func importCommand() *cobra.Command { return importer.Command() }

// adaptedServer and adaptedRoute are what the import reads of the
// caddyfile adapter's JSON.
type adaptedServer struct {
	Listen []string       `json:"listen"`
	Routes []adaptedRoute `json:"routes"`
}

type adaptedRoute struct {
	Match  []map[string]json.RawMessage `json:"match"`
	Handle []json.RawMessage            `json:"handle"`
}

// blockFound is what a site block's route holds.
type blockFound struct {
	gateways, upstreams []json.RawMessage
	others              []string // other handlers, by name
	matched             bool     // a matcher other than the site's hosts
}

// readSiteBlocks adapts the Caddyfile and finds its school_gateway site
// blocks, one per site route.
func readSiteBlocks(path string) ([]*operator.ImportedSchool, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	raw, _, err := caddyconfig.GetAdapter("caddyfile").Adapt(body, map[string]any{"filename": path})
	if err != nil {
		return nil, fmt.Errorf("adapting %s: %v", path, err)
	}
	var cfg struct {
		Apps struct {
			HTTP struct {
				Servers map[string]adaptedServer `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("reading the adapted %s: %v", path, err)
	}
	var out []*operator.ImportedSchool
	seen := map[string]*operator.ImportedSchool{}
	for _, name := range slices.Sorted(mapKeys(cfg.Apps.HTTP.Servers)) {
		srv := cfg.Apps.HTTP.Servers[name]
		for _, route := range srv.Routes {
			var hosts []string
			var found blockFound
			for _, m := range route.Match {
				for k, v := range m {
					if k != "host" {
						found.matched = true
						continue
					}
					var hs []string
					_ = json.Unmarshal(v, &hs)
					hosts = append(hosts, hs...)
				}
			}
			found.walk(route.Handle)
			if len(found.gateways) == 0 {
				continue
			}
			s := newImported(found, hosts, listenPort(srv.Listen))
			if prev := seen[s.Name]; prev != nil && s.Err == nil && prev.Err == nil {
				prev.Err = fmt.Errorf("two site blocks configure %s; a record is one", s.Name)
				continue
			}
			seen[s.Name] = s
			out = append(out, s)
		}
	}
	return out, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// walk gathers the handlers of a route's tree.
func (f *blockFound) walk(handle []json.RawMessage) {
	for _, raw := range handle {
		var h struct {
			Handler string         `json:"handler"`
			Routes  []adaptedRoute `json:"routes"`
		}
		if json.Unmarshal(raw, &h) != nil {
			continue
		}
		switch h.Handler {
		case "school_gateway":
			f.gateways = append(f.gateways, raw)
		case "schoolgate_upstream":
			f.upstreams = append(f.upstreams, raw)
		case "subroute":
			for _, r := range h.Routes {
				if len(r.Match) > 0 {
					f.matched = true
				}
				f.walk(r.Handle)
			}
		default:
			f.others = append(f.others, h.Handler)
		}
	}
}

// listenPort is the port a server listens on, "" when it is not one.
func listenPort(listen []string) string {
	if len(listen) != 1 {
		return ""
	}
	addr, err := caddy.ParseNetworkAddress(listen[0])
	if err != nil || addr.StartPort != addr.EndPort {
		return ""
	}
	return fmt.Sprint(addr.StartPort)
}

// newImported reads a site block's gateway as a record, or says why it
// cannot be one.
func newImported(f blockFound, hosts []string, port string) *operator.ImportedSchool {
	s := &operator.ImportedSchool{Name: strings.Join(hosts, ", ")}
	g := new(Gateway)
	var opts map[string]json.RawMessage
	if err := json.Unmarshal(f.gateways[0], &opts); err != nil {
		s.Err = err
		return s
	}
	delete(opts, "handler")
	raw, _ := json.Marshal(opts)
	if err := caddy.StrictUnmarshalJSON(raw, g); err != nil {
		s.Err = fmt.Errorf("its school_gateway does not read: %v", err)
		return s
	}
	s.Name = g.Issuer
	s.Rec = registry.Record{Issuer: g.Issuer}
	switch {
	case len(f.gateways) > 1:
		s.Err = errors.New("its site block has several school_gateway handlers; a record is one school on its whole site")
	case len(f.others) > 0:
		s.Err = fmt.Errorf("its site block has other handlers (%s), which a platform school does not have "+
			"(handlers every school needs go before school_platform in its site block)", strings.Join(slices.Compact(slices.Sorted(slices.Values(f.others))), ", "))
	case f.matched:
		s.Err = errors.New("its school_gateway serves part of the site (a matcher or handle block); a record's school answers every path of its hosts")
	case len(f.upstreams) != 1 || !defaultProxy(f.upstreams[0], g):
		s.Err = errors.New("its upstream block (reverse_proxy options) has no equivalent in a record, whose proxy to the legacy server has the default transport")
	}
	if s.Err != nil {
		return s
	}
	s.Err = aliases(s, hosts, port)
	if s.Err != nil {
		return s
	}
	s.Rec.Config = recordConfig(opts, g)
	if g.Store == nil {
		s.Data = filepath.Dir(g.dataPath())
	} else if g.Store.Postgres == nil {
		s.Err = errors.New("its store is not postgres; only bbolt and PostgreSQL schools can be records")
	} else {
		pg := &operator.ImportedPostgres{}
		pg.DSN, pg.KeySecret, pg.Err = g.Store.Postgres.resolvedAs("store postgres")
		s.Postgres = pg
	}
	return s
}

// defaultProxy reports whether the gateway's proxy is the default one to
// its upstream: a record's school gets that one.
func defaultProxy(raw json.RawMessage, g *Gateway) bool {
	var h struct {
		Proxy json.RawMessage `json:"proxy"`
	}
	if json.Unmarshal(raw, &h) != nil {
		return false
	}
	def, err := defaultUpstreamProxy(g.Upstream, g.LegacyTimeout())
	if err != nil {
		return false
	}
	want, _ := json.Marshal(def)
	var a, b any
	return json.Unmarshal(h.Proxy, &a) == nil && json.Unmarshal(want, &b) == nil && reflect.DeepEqual(a, b)
}

// aliases makes the block's other addresses the record's hosts, each
// with the port its server listens on.
func aliases(s *operator.ImportedSchool, hosts []string, port string) error {
	scheme, issuerHost, _ := strings.Cut(s.Rec.Issuer, "://")
	tls := scheme == "https"
	own := registry.HostKey(issuerHost, tls)
	for _, h := range hosts {
		if strings.ContainsAny(h, "*{") {
			return fmt.Errorf("its site address %s is not one host; a record's hosts are names", h)
		}
		hostport := h
		if strings.Contains(h, ":") {
			hostport = "[" + h + "]"
		}
		if port != "" {
			hostport = net.JoinHostPort(strings.Trim(hostport, "[]"), port)
		}
		key := registry.HostKey(hostport, tls)
		if key != own && !slices.Contains(s.Rec.Hosts, key) {
			s.Rec.Hosts = append(s.Rec.Hosts, key)
		}
	}
	return nil
}

// recordConfig is a record's configuration: the block's options without
// the handler's name, the issuer (the record's), the store and the data
// (placement), nor the options the directive fills in by default.
func recordConfig(opts map[string]json.RawMessage, g *Gateway) json.RawMessage {
	def := &Gateway{Options: school.Options{Upstream: g.Upstream, Issuer: g.Issuer}}
	def.SetDefaults()
	var defaults map[string]json.RawMessage
	raw, _ := json.Marshal(def)
	_ = json.Unmarshal(raw, &defaults)
	cfg := map[string]json.RawMessage{}
	for k, v := range opts {
		switch k {
		case "issuer", "store", "data":
			continue
		case "upstream":
		default:
			if d, ok := defaults[k]; ok && operator.SameJSON(d, v) {
				continue
			}
		}
		cfg[k] = v
	}
	out, _ := json.Marshal(cfg)
	return out
}
