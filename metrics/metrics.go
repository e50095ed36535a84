package metrics

import (
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// The gateway's metrics are in Caddy's metrics registry, served where
// Caddy serves metrics (the admin endpoint's /metrics, or a `metrics`
// handler). Each event a school counts adds to the instance's totals,
// series without a school's label, so that their number does not grow
// with the schools; and to the school's own counters, which are series
// (schoolgate_school_*, labelled site) only for the schools
// metrics_per_school chooses, chosen at each scrape (perschool.go).
// A label's values are a fixed set (families): a value outside it is
// counted as "other", so that nothing a request carries makes a series.

// family is one metric: its labels beside site, and each label's values.
type family struct {
	name, help string
	labels     []string
	values     [][]string
	// zeros gives the totals a series for each value from the start, so
	// that a rate reads 0 rather than nothing; a family of two labels has
	// a series once its pair counted something.
	zeros bool

	// size is the number of slots, every value of each label and "other"
	// (slot); slotLabels are each slot's label values.
	size       int
	slotLabels [][]string
	// total and PerSchool describe the instance's series and a school's.
	total, PerSchool *prometheus.Desc
}

const (
	famTokens = iota
	famRefused
	famRegistered
	famLookups
	famProtected
	famMCP
	famDisconnects
	famRequestsRefused
	numFamilies
)

// otherValue is the label value of what is outside a label's values.
const otherValue = "other"

// families are the metrics, with the values their labels take. The
// values of the refusals' reason are the error codes the authorization
// server answers with (TestMetricsKnowEveryCode checks them against its
// source).
var families = [numFamilies]*family{
	famTokens: {name: "tokens_issued_total", help: "Token responses of the token endpoint, by grant type.",
		labels: []string{"grant_type"}, values: [][]string{authserver.GrantTypes()}, zeros: true},
	famRefused: {name: "oauth_refused_total", help: "OAuth error answers, by endpoint and error code (rate_limited for 429).",
		labels: []string{"endpoint", "reason"}, values: [][]string{endpointNames(), {
			"invalid_request", "invalid_client", "invalid_grant", "invalid_scope", "invalid_target",
			"unsupported_grant_type", "invalid_client_metadata", "invalid_redirect_uri", "server_error",
			"temporarily_unavailable", "not_found", "rate_limited"}}},
	famRegistered: {name: "registrations_total", help: "Successful dynamic client registrations, by the kind of client returned.",
		labels: []string{"kind"}, values: [][]string{{store.KindVendor, store.KindLoopback}}, zeros: true},
	famLookups: {name: "token_lookups_total", help: "Access-token validations, by whether the in-memory cache answered.",
		labels: []string{"result"}, values: [][]string{{"hit", "miss"}}, zeros: true},
	famProtected: {name: "protected_requests_total", help: "Requests to protected resources, by outcome.",
		labels: []string{"outcome"}, values: [][]string{{"allowed", "denied_by_policy", "path_refused",
			"invalid_request", "invalid_token", "insufficient_scope", "temporarily_unavailable"}}, zeros: true},
	famMCP: {name: "mcp_requests_total", help: "Requests to /mcp, by caller.",
		labels: []string{"caller"}, values: [][]string{{"anonymous", policy.AudienceMember, policy.AudienceOperator, "refused", "unavailable"}}, zeros: true},
	famDisconnects: {name: "grants_disconnected_total", help: "Grants ended, by who ended them: the person (member), an operator, or the client revoking its refresh token.",
		labels: []string{"by"}, values: [][]string{{authserver.DisconnectedByMember, authserver.DisconnectedByOperator, authserver.DisconnectedByClient}}, zeros: true},
	famRequestsRefused: {name: "requests_refused_total", help: "Requests refused for want of capacity, the instance's (fair share) or the school's (budget, legacy server), by cause.",
		labels: []string{"cause"}, values: [][]string{causeNames()}, zeros: true},
}

// endpointNames are the authorization server's endpoints as the refusals
// name them; the pages' areas are "other".
func endpointNames() []string {
	var names []string
	for _, e := range authserver.Endpoints() {
		if !slices.Contains(names, e.Name) {
			names = append(names, e.Name)
		}
	}
	return names
}

func init() {
	for _, f := range families {
		f.size = 1
		for _, vs := range f.values {
			f.size *= len(vs) + 1
		}
		f.slotLabels = make([][]string, f.size)
		for slot := range f.size {
			labels := make([]string, len(f.values))
			for i, rest := len(f.values)-1, slot; i >= 0; i-- {
				n := len(f.values[i]) + 1
				labels[i] = otherValue
				if v := rest % n; v < len(f.values[i]) {
					labels[i] = f.values[i][v]
				}
				rest /= n
			}
			f.slotLabels[slot] = labels
		}
		f.total = prometheus.NewDesc("schoolgate_"+f.name, f.help, f.labels, nil)
		f.PerSchool = prometheus.NewDesc("schoolgate_school_"+f.name, "One school's: "+f.help,
			append([]string{"site"}, f.labels...), nil)
	}
}

// index is v's place among values, len(values) ("other") if it is none of
// them. The lists are a few names: a scan is as quick as a map.
func index(values []string, v string) int {
	for i, known := range values {
		if known == v {
			return i
		}
	}
	return len(values)
}

// slot1 and slot2 are the slots of a family's label values.
func (f *family) slot1(v string) int { return index(f.values[0], v) }

func (f *family) slot2(a, b string) int {
	return index(f.values[0], a)*(len(f.values[1])+1) + index(f.values[1], b)
}

// counterSet is a set of counters, a family's slots made on the family's
// first event, so that a school that never sees a refusal holds no
// refusal counters. Counting is an atomic load and add: no lock, no label
// lookup. A family's slots take whole cache lines (cacheLineSlots), so
// that two sets counted from different processors do not share one.
type counterSet struct {
	fams [numFamilies]atomic.Pointer[[]atomic.Uint64]
}

// cacheLineSlots are the counters in a cache line of 64 bytes.
const cacheLineSlots = 8

func (c *counterSet) add(f, slot int) {
	p := c.fams[f].Load()
	if p == nil {
		s := make([]atomic.Uint64, (families[f].size+cacheLineSlots-1)/cacheLineSlots*cacheLineSlots)
		if !c.fams[f].CompareAndSwap(nil, &s) {
			p = c.fams[f].Load()
		} else {
			p = &s
		}
	}
	(*p)[slot].Add(1)
}

// slots are a family's counters, nil before its first event.
func (c *counterSet) slots(f int) []atomic.Uint64 {
	if p := c.fams[f].Load(); p != nil {
		return *p
	}
	return nil
}

// metrics are a config's: the instance's totals, each school's counters
// by issuer, and which schools have series (perschool.go). One
// collector in the config's registry, shared by its schools.
type Metrics struct {
	// totals are the instance's counts in shards, a school counting into
	// one of them (schoolCounters.shard), so that the schools served on
	// different processors do not all add to one counter; a scrape adds
	// the shards up.
	totals [totalShards]counterSet

	mu      sync.Mutex
	schools map[string]*schoolCounters
	made    int // schools' counters made, which deals them the shards

	// per is which schools have series: nil until the App's Start set it
	// (every school, as for site blocks).
	per atomic.Pointer[PerSchool]
	// rankMu serializes the ranking of a top by traffic; ranked is when
	// it last ran.
	rankMu sync.Mutex
	ranked time.Time
}

// totalShards is how many shards the totals are counted in.
const totalShards = 16

// schoolCounters are one school's counters, kept by issuer while the
// config runs (and its record is in the registry, for a platform's), so
// that a school let go of and built again counts on.
type schoolCounters struct {
	site string
	// shard is the totals' shard the school counts into.
	shard *counterSet
	counterSet
	// events counts the school's events but its token validations (each
	// repeats a protected or /mcp request's count): its traffic, which a
	// top ranks by.
	events atomic.Uint64
	// What the ranking of a top keeps, under rankMu: the school's
	// counted events at the last ranking, its traffic score, and whether
	// it was in the top.
	counted uint64
	score   float64
	inTop   bool
}

// For returns the metrics of reg (a config's registry), registering
// them with the config's first school; the others get the ones already
// registered.
func For(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		return &Metrics{schools: map[string]*schoolCounters{}}
	}
	key := weak.Make(reg)
	if m, ok := registered.Load(key); ok {
		return m.(*Metrics)
	}
	m := &Metrics{schools: map[string]*schoolCounters{}}
	if err := reg.Register(m); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return m
		}
		existing, ok := are.ExistingCollector.(*Metrics)
		if !ok {
			return m
		}
		m = existing
	}
	if known, loaded := registered.LoadOrStore(key, m); loaded {
		return known.(*Metrics)
	}
	runtime.AddCleanup(reg, func(k weak.Pointer[prometheus.Registry]) { registered.CompareAndDelete(k, m) }, key)
	return m
}

// registered is the Metrics For registered with each registry, found by
// a lookup when a platform's school is built (registering again to be
// handed them, as before, built and dropped an error: a sixth of a
// first build's processor). The registry is held weakly, and its entry
// goes with it.
var registered sync.Map // weak.Pointer[prometheus.Registry] → *Metrics

// schoolOf returns the counters of a school, made on its first build.
func (m *Metrics) schoolOf(site string) *schoolCounters {
	m.mu.Lock()
	defer m.mu.Unlock()
	sc := m.schools[site]
	if sc == nil {
		sc = &schoolCounters{site: site, shard: &m.totals[m.made%totalShards]}
		m.schools[site] = sc
		m.made++
	}
	return sc
}

// forget lets go of a school's counters: a platform's school removed from
// its registry, whose series would otherwise stay as long as the config
// runs. A request still in flight in it counts into counters no series
// shows any more, and into the totals.
func (m *Metrics) Forget(site string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.schools, site)
}

// Observer counts one school's events into the instance's totals and
// the school's counters; it implements school.Observer.
type Observer struct {
	total  *counterSet
	school *schoolCounters
}

func NewObserver(m *Metrics, site string) Observer {
	sc := m.schoolOf(site)
	return Observer{total: sc.shard, school: sc}
}

func (o Observer) count(f, slot int) {
	o.total.add(f, slot)
	o.school.add(f, slot)
	o.school.events.Add(1)
}

func (o Observer) TokenIssued(grantType string) {
	o.count(famTokens, families[famTokens].slot1(grantType))
}

func (o Observer) Refused(endpoint, code string) {
	o.count(famRefused, families[famRefused].slot2(endpoint, code))
}

func (o Observer) Registered(kind string) {
	o.count(famRegistered, families[famRegistered].slot1(kind))
}

func (o Observer) TokenLookup(cached bool) {
	slot := 1 // miss
	if cached {
		slot = 0
	}
	// Not traffic: the request validated is counted as one.
	o.total.add(famLookups, slot)
	o.school.add(famLookups, slot)
}

func (o Observer) GrantDisconnected(by string) {
	o.count(famDisconnects, families[famDisconnects].slot1(by))
}

func (o Observer) ProtectedOutcome(outcome string) {
	o.count(famProtected, families[famProtected].slot1(outcome))
}

func (o Observer) MCPCaller(caller string) {
	o.count(famMCP, families[famMCP].slot1(caller))
}

func (o Observer) Refusal(cause store.Cause) {
	o.count(famRequestsRefused, families[famRequestsRefused].slot1(cause.String()))
}

// Ref is a site's observer. A reload that keeps the site (its
// configuration unchanged) points it at the new config's metrics,
// which are the ones Caddy then serves.
type Ref struct{ p atomic.Pointer[Observer] }

func NewRef(o Observer) *Ref {
	r := new(Ref)
	r.Use(o)
	return r
}

func (r *Ref) Use(o Observer) { r.p.Store(&o) }

func (r *Ref) TokenIssued(grantType string)    { r.p.Load().TokenIssued(grantType) }
func (r *Ref) Refused(endpoint, code string)   { r.p.Load().Refused(endpoint, code) }
func (r *Ref) Registered(kind string)          { r.p.Load().Registered(kind) }
func (r *Ref) TokenLookup(cached bool)         { r.p.Load().TokenLookup(cached) }
func (r *Ref) GrantDisconnected(by string)     { r.p.Load().GrantDisconnected(by) }
func (r *Ref) ProtectedOutcome(outcome string) { r.p.Load().ProtectedOutcome(outcome) }
func (r *Ref) MCPCaller(caller string)         { r.p.Load().MCPCaller(caller) }
func (r *Ref) Refusal(cause store.Cause)       { r.p.Load().Refusal(cause) }

// causeNames are the names of the causes Refusal is given: want of
// capacity. The others of store.Cause (rate_limited, store_unavailable)
// are counted where they are answered, as OAuth refusals and outcomes.
func causeNames() []string {
	var names []string
	for _, c := range []store.Cause{store.CauseFairShare, store.CauseBudgetRequests, store.CauseBudgetMCPAnonymous,
		store.CauseMCPAnonymousAddress, store.CauseLegacyBusy, store.CauseLegacyTimeout} {
		names = append(names, c.String())
	}
	return names
}
