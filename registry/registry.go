// Package registry keeps the schools of a platform: one record per school
// (its origin, the further host names it answers on, and its
// configuration in the school_gateway handler's JSON), written by
// operators and deploy tools and read by every gateway instance, which
// applies a change without a reload. It is plain Go: the adapter checks a
// record's configuration with the directive's own rules, handed to a
// registry as a Validator, so a record is refused at write time with the
// message the directive would give.
//
// Two registries implement it: Dir, one JSON file per school in a
// directory, watched; and the PostgreSQL one in pgstore, a table in the
// database that also keeps the schools' stores, whose writes are
// announced to the other instances in the writing transaction.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/policy"
)

// Record is one school of a platform.
type Record struct {
	// Issuer is the school's origin in its one spelling
	// (policy.ParseOrigin): the record's key, and the host it answers on.
	Issuer string `json:"issuer"`
	// Hosts are further host names the school answers on and gets
	// certificates for (aliases such as www.school.example), each in
	// HostKey's form for the issuer's scheme. Not the issuer's own host.
	Hosts []string `json:"hosts,omitempty"`
	// Disabled keeps the record and the school's data, but the school
	// answers no request (404) and gets no certificate.
	Disabled bool `json:"disabled,omitempty"`
	// Config is the school's configuration: a JSON object with the
	// school_gateway handler's fields (upstream, catalog, vendors, rules,
	// …), checked by the registry's Validator. Its issuer, if it names
	// one, is the record's.
	Config json.RawMessage `json:"config"`
	// Version counts the record's writes: 1 when created, one more at
	// each Put. Set by the registry.
	Version int64 `json:"version"`
	// UpdatedAt is the last write's time. Set by the registry.
	UpdatedAt time.Time `json:"updated_at"`
}

// HostKeys are the hosts the record answers on: the issuer's, then the
// aliases. The issuer's key is a part of the issuer's string when it is
// spelled alike (as a checked record's is), not a string of its own: the
// host tables of 100,000 schools keep it.
func (r *Record) HostKeys() []string {
	return r.AppendHostKeys(make([]string, 0, 1+len(r.Hosts)))
}

// AppendHostKeys appends the record's HostKeys to dst: a caller going
// through 100,000 records lists each one's keys in one array of its own,
// making no garbage of them.
func (r *Record) AppendHostKeys(dst []string) []string {
	return append(append(dst, r.issuerKey()), r.Hosts...)
}

// issuerKey is HostKeys' first: the issuer's host key.
func (r *Record) issuerKey() string {
	key, _, _ := IssuerKey(r.Issuer)
	return key
}

// IssuerKey is the host key of an issuer (a record's HostKeys' first) and
// whether it is https; ok is false for a string that names no scheme. The
// key is the issuer's own host, a part of its string, when the two are
// spelled alike, so that a table keeping the keys of many schools keeps
// no second copy of them.
func IssuerKey(issuer string) (key string, tls, ok bool) {
	scheme, host, ok := strings.Cut(issuer, "://")
	if !ok {
		return "", false, false
	}
	tls = scheme == "https"
	if key = HostKey(host, tls); key != host {
		return key, tls, true
	}
	return host, tls, true
}

// Check puts the record's issuer and hosts in their one spelling and
// refuses a record whose issuer or hosts are not such, whose hosts repeat
// or whose Config is not a JSON object. It does not judge the
// configuration itself: the Validator does.
func (r *Record) Check() error {
	issuer, err := policy.ParseOrigin(r.Issuer)
	if err != nil {
		return fmt.Errorf("issuer: %v", err)
	}
	r.Issuer = issuer
	tls := strings.HasPrefix(issuer, "https://")
	seen := map[string]bool{r.issuerKey(): true}
	for i, h := range r.Hosts {
		key := HostKey(h, tls)
		if !validHost(key) {
			return fmt.Errorf("hosts: %q is not a host name (optionally with a port)", h)
		}
		if seen[key] {
			return fmt.Errorf("hosts: %s is named twice (the issuer's host is the school's already)", key)
		}
		seen[key] = true
		r.Hosts[i] = key
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(r.Config, &obj); err != nil || obj == nil {
		return errors.New("config: must be a JSON object of the school_gateway options")
	}
	return nil
}

// validHost reports whether key is a host[:port] a Host header may carry.
func validHost(key string) bool {
	if key == "" || strings.ContainsAny(key, "/?#@ \t") {
		return false
	}
	_, err := policy.ParseOrigin("https://" + key)
	return err == nil
}

// HostKey is the one spelling of a host as requests name it: lower case,
// without a trailing dot, with the port only when it is not the scheme's
// default (443 with tls, else 80). A Host header and a record's hosts
// meet in it.
func HostKey(hostport string, tls bool) string {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	host, port, found := strings.Cut(hostport, ":")
	if strings.HasPrefix(hostport, "[") {
		// An IPv6 literal: the port, if any, follows the bracket.
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return strings.ToLower(hostport)
		}
		host, port, found = hostport[:end+1], strings.TrimPrefix(hostport[end+1:], ":"), end+1 < len(hostport)
	}
	host = strings.TrimSuffix(host, ".")
	if found {
		host += ":" + port
	}
	return policy.CanonicalHost(host, scheme)
}

// Validator checks a record's configuration with the school_gateway
// directive's rules and messages; a registry refuses what it refuses.
type Validator func(*Record) error

// Registry is where a platform's schools are written and read. Every
// implementation honours, and registrytest checks:
//
//   - Put and Remove are each one transaction: a reader sees the record
//     before or after, never half written.
//   - Put checks the record (Record.Check, then the Validator) and
//     refuses, with ErrHostTaken, a record one of whose hosts (its
//     issuer's included) belongs to another record; nothing is written
//     then.
//   - Watch's function is called, from one goroutine at a time, for every
//     change written by any instance, this one included, within a second
//     of the write.
type Registry interface {
	// List returns every record, in no particular order.
	List(ctx context.Context) ([]Record, error)
	// Get returns the record of an issuer (in any spelling), or
	// ErrNotFound.
	Get(ctx context.Context, issuer string) (Record, error)
	// Put creates the record of r.Issuer or replaces it, and returns it
	// as stored (checked, its Version and UpdatedAt set).
	Put(ctx context.Context, r Record) (Record, error)
	// Remove deletes the record of an issuer, or returns ErrNotFound.
	// The school's data is kept.
	Remove(ctx context.Context, issuer string) error
	// Watch calls fn for each change until stop is called.
	Watch(fn func(Change)) (stop func())
	Close() error
}

// Sharer is a Registry that lists its own records, not copies: a record
// it lists is never changed afterwards (a change is a new record), and
// the caller only reads it. A platform keeps the records of its idle
// schools so, where a copy each would cost about 100 bytes a school.
type Sharer interface {
	ListShared(ctx context.Context) ([]*Record, error)
}

// Change names what changed in a registry.
type Change struct {
	// Issuer is the school whose record was written or removed; empty
	// when changes may have been missed (a reconnect, a directory that
	// could not be watched for a while): read everything again.
	Issuer string
}

var (
	// ErrNotFound: no record has that issuer.
	ErrNotFound = errors.New("no such school in the registry")
	// ErrHostTaken: a host of the record belongs to another record.
	ErrHostTaken = errors.New("the host belongs to another school")
)

// HostTakenError says which host another record has, and whose it is.
type HostTakenError struct {
	Host, Owner string
}

func (e *HostTakenError) Error() string {
	return fmt.Sprintf("hosts: %s is a host of %s already", e.Host, e.Owner)
}

// Is makes a HostTakenError an ErrHostTaken.
func (e *HostTakenError) Is(target error) bool { return target == ErrHostTaken }

// SameRecord reports whether two records configure a school alike:
// whether a change from a to b needs the school rebuilt.
func SameRecord(a, b *Record) bool {
	return a.Issuer == b.Issuer && a.Disabled == b.Disabled && slices.Equal(a.Hosts, b.Hosts) &&
		string(a.Config) == string(b.Config)
}
