package caddymodule

import (
	"errors"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schoolgate/schoolgate/policy"
)

// Metrics per site, in Caddy's metrics registry (served where Caddy
// serves metrics: the admin endpoint's /metrics, or a `metrics` handler).
// Every series carries the site's issuer as the label "site".
type metrics struct {
	tokensIssued *prometheus.CounterVec // site, grant_type
	refused      *prometheus.CounterVec // site, endpoint, reason
	registered   *prometheus.CounterVec // site, kind
	tokenLookups *prometheus.CounterVec // site, result (hit, miss)
	protected    *prometheus.CounterVec // site, outcome
	mcpRequests  *prometheus.CounterVec // site, caller (anonymous, member, operator, refused)
	disconnects  *prometheus.CounterVec // site, by (member, operator, client)
	refusedAdm   *prometheus.CounterVec // site, cause (fair_share, budget_requests, budget_mcp_anonymous, mcp_anonymous_address)
}

// metricsFor returns the collectors of reg (a config's registry),
// registering them with the first site; the other sites of the config
// get the ones already registered.
func metricsFor(reg *prometheus.Registry) *metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "schoolgate", Name: name, Help: help},
			append([]string{"site"}, labels...))
		if reg == nil {
			return c
		}
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
					return existing
				}
			}
		}
		return c
	}
	m := &metrics{
		tokensIssued: counter("tokens_issued_total", "Token responses of the token endpoint, by grant type.", "grant_type"),
		refused:      counter("oauth_refused_total", "OAuth error answers, by endpoint and error code (rate_limited for 429).", "endpoint", "reason"),
		registered:   counter("registrations_total", "Successful dynamic client registrations, by the kind of client returned.", "kind"),
		tokenLookups: counter("token_lookups_total", "Access-token validations, by whether the in-memory cache answered.", "result"),
		protected:    counter("protected_requests_total", "Requests to protected resources, by outcome.", "outcome"),
		mcpRequests:  counter("mcp_requests_total", "Requests to /mcp, by caller.", "caller"),
		disconnects:  counter("grants_disconnected_total", "Grants ended, by who ended them: the person (member), an operator, or the client revoking its refresh token.", "by"),
		refusedAdm:   counter("admission_refused_total", "Requests refused before they were served, by cause: fair_share (503), budget_requests, budget_mcp_anonymous, mcp_anonymous_address (429).", "cause"),
	}
	return m
}

// siteObserver counts one site's events; it implements
// school.Observer. The series counted on every request are bound once,
// so the request path does no label lookup.
type siteObserver struct {
	m                      *metrics
	site                   string
	lookupHit, lookupMiss  prometheus.Counter
	allowed, mcpAnonymous  prometheus.Counter
	mcpMember, mcpOperator prometheus.Counter
}

func newSiteObserver(m *metrics, site string) siteObserver {
	return siteObserver{m: m, site: site,
		lookupHit: m.tokenLookups.WithLabelValues(site, "hit"), lookupMiss: m.tokenLookups.WithLabelValues(site, "miss"),
		allowed:      m.protected.WithLabelValues(site, "allowed"),
		mcpAnonymous: m.mcpRequests.WithLabelValues(site, "anonymous"),
		mcpMember:    m.mcpRequests.WithLabelValues(site, policy.AudienceMember),
		mcpOperator:  m.mcpRequests.WithLabelValues(site, policy.AudienceOperator)}
}

func (o siteObserver) TokenIssued(grantType string) {
	o.m.tokensIssued.WithLabelValues(o.site, grantType).Inc()
}

func (o siteObserver) Refused(endpoint, code string) {
	o.m.refused.WithLabelValues(o.site, endpoint, code).Inc()
}

func (o siteObserver) Registered(kind string) { o.m.registered.WithLabelValues(o.site, kind).Inc() }

func (o siteObserver) TokenLookup(cached bool) {
	if cached {
		o.lookupHit.Inc()
	} else {
		o.lookupMiss.Inc()
	}
}

func (o siteObserver) GrantDisconnected(by string) {
	o.m.disconnects.WithLabelValues(o.site, by).Inc()
}

func (o siteObserver) ProtectedOutcome(outcome string) {
	if outcome == "allowed" {
		o.allowed.Inc()
		return
	}
	o.m.protected.WithLabelValues(o.site, outcome).Inc()
}

func (o siteObserver) AdmissionRefused(cause string) {
	o.m.refusedAdm.WithLabelValues(o.site, cause).Inc()
}

func (o siteObserver) MCPCaller(caller string) {
	switch caller {
	case "anonymous":
		o.mcpAnonymous.Inc()
	case policy.AudienceMember:
		o.mcpMember.Inc()
	case policy.AudienceOperator:
		o.mcpOperator.Inc()
	default:
		o.m.mcpRequests.WithLabelValues(o.site, caller).Inc()
	}
}

// observerRef is a site's observer. A reload that keeps the site (its
// configuration unchanged) points it at the new config's metrics registry,
// which is the one Caddy then serves.
type observerRef struct{ p atomic.Pointer[siteObserver] }

func newObserverRef(o siteObserver) *observerRef {
	r := new(observerRef)
	r.use(o)
	return r
}

func (r *observerRef) use(o siteObserver) { r.p.Store(&o) }

func (r *observerRef) TokenIssued(grantType string)    { r.p.Load().TokenIssued(grantType) }
func (r *observerRef) Refused(endpoint, code string)   { r.p.Load().Refused(endpoint, code) }
func (r *observerRef) Registered(kind string)          { r.p.Load().Registered(kind) }
func (r *observerRef) TokenLookup(cached bool)         { r.p.Load().TokenLookup(cached) }
func (r *observerRef) GrantDisconnected(by string)     { r.p.Load().GrantDisconnected(by) }
func (r *observerRef) ProtectedOutcome(outcome string) { r.p.Load().ProtectedOutcome(outcome) }
func (r *observerRef) MCPCaller(caller string)         { r.p.Load().MCPCaller(caller) }
func (r *observerRef) AdmissionRefused(cause string)   { r.p.Load().AdmissionRefused(cause) }

// forget deletes every series of a site: a platform's school removed from
// its registry, whose series would otherwise stay as long as the config
// runs, one set per school ever removed.
func (m *metrics) forget(site string) {
	only := prometheus.Labels{"site": site}
	for _, v := range []*prometheus.CounterVec{m.tokensIssued, m.refused, m.registered, m.tokenLookups,
		m.protected, m.mcpRequests, m.disconnects, m.refusedAdm} {
		v.DeletePartialMatch(only)
	}
}
