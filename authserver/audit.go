package authserver

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/schoolgate/schoolgate/store"
)

// The audit trail. Every request the server answers carries a
// store.Audit on its context (withAudit): the handler records the event of
// its action just before the store call that makes the change, and the
// store keeps the event in that call's transaction (store/audit.go). Each
// stored event is also logged, once committed, on Config.AuditLogger.
// Events that change nothing stored (failed client authentication, a
// refused metadata document, a rate-limit refusal) are logged only.

// Events logged and not stored.
const (
	eventClientAuthFailed = "client_auth_failed"
	eventMetadataRefused  = "metadata_document_refused"
	eventRateLimited      = "rate_limited"
)

// rateLimitSample logs one rate-limit refusal in this many: a flood must
// not turn into a flood of log lines.
const rateLimitSample = 100

// withAudit gives the request its Audit: its id, the caller's address as
// the adapter sees it, the server's clock and log. A request that carries
// one already (the adapter's, a test's) keeps it.
func (s *Server) withAudit(r *http.Request) *http.Request {
	if store.AuditOf(r.Context()) != nil {
		s.auditContext(r.Context())
		return r
	}
	a := &store.Audit{ClientIP: s.clientAddr(r), Now: s.cfg.Now, Log: s.logAudit}
	if s.cfg.RequestID != nil {
		a.NewRequestID = func() string { return s.cfg.RequestID(r) }
	}
	return r.WithContext(store.WithAudit(r.Context(), a))
}

// auditContext returns ctx with an Audit, attaching one for a caller that
// came without (the adapter's admin API calls the server's methods
// directly), and the Audit.
func (s *Server) auditContext(ctx context.Context) (context.Context, *store.Audit) {
	a := store.AuditOf(ctx)
	if a == nil {
		a = &store.Audit{}
		ctx = store.WithAudit(ctx, a)
	}
	if a.Now == nil {
		a.Now = s.cfg.Now
	}
	if a.Log == nil {
		a.Log = s.logAudit
	}
	return ctx, a
}

// record records e on ctx's Audit, for the store call that follows, and
// returns the context that call takes.
func (s *Server) record(ctx context.Context, e store.AuditEvent) context.Context {
	ctx, a := s.auditContext(ctx)
	a.Record(e)
	return ctx
}

// disconnectEvent is the event of a disconnection asked by by: the
// member, or whoever the request acts for (an operator in the admin area,
// the admin API), an operator when it does not say.
func (s *Server) disconnectEvent(ctx context.Context, by string, e store.AuditEvent) store.AuditEvent {
	e.Type = store.EventDisconnected
	switch a := store.AuditOf(ctx); {
	case by == DisconnectedByMember:
		e.Actor = store.ActorMember
	case a != nil && a.Actor != "":
		e.Actor, e.ActorSub = a.Actor, a.ActorSub
	default:
		e.Actor = store.ActorOperator
	}
	return e
}

// routineEvents are the token traffic of every client, several a second
// on a busy school: stored like every event, but logged at DEBUG, so
// that a default log is not a line per token and its writes do not
// weigh on the token endpoint. An operator who wants them in the log
// gives the audit log "level DEBUG" (docs/privacy.md).
var routineEvents = map[string]bool{
	store.EventCodeIssued: true, store.EventCodeRedeemed: true, store.EventTokenRefreshed: true,
}

// auditLevel is the level an event is logged at.
func auditLevel(typ string) slog.Level {
	if routineEvents[typ] {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// logAudit writes an event to the audit log.
func (s *Server) logAudit(e store.AuditEvent) {
	level := auditLevel(e.Type)
	if !s.cfg.AuditLogger.Enabled(context.Background(), level) {
		return
	}
	attrs := make([]slog.Attr, 0, 12)
	add := func(k, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(k, v))
		}
	}
	add("event", e.Type)
	add("id", e.ID)
	add("issuer", s.cfg.Issuer)
	add("sub", e.Subject)
	add("client_id", e.ClientID)
	add("actor", e.Actor)
	add("actor_sub", e.ActorSub)
	add("target", e.Target)
	add("outcome", e.Outcome)
	add("detail", e.Detail)
	add("request_id", e.RequestID)
	add("client_ip", e.ClientIP)
	if e.Grants > 0 {
		attrs = append(attrs, slog.Int("grants", e.Grants))
	}
	s.cfg.AuditLogger.LogAttrs(context.Background(), level, "audit "+e.Type, attrs...)
}

// logOnly logs an event that changes nothing stored, stamped with the
// request's context.
func (s *Server) logOnly(ctx context.Context, e store.AuditEvent) {
	if a := store.AuditOf(ctx); a != nil {
		e.RequestID, e.ClientIP = a.ID(), a.ClientIP
	}
	e.Time = s.cfg.Now()
	s.logAudit(e)
}

// clip bounds a caller's string before it goes into a log line.
func clip(v string) string {
	if len(v) > MaxClientIDLen {
		return v[:MaxClientIDLen]
	}
	return v
}

// rateLimitedSeen counts rate-limit refusals for the sampling.
var rateLimitedSeen atomic.Uint64

// Audit returns a page of the school's audit events, newest first.
func (s *Server) Audit(ctx context.Context, q store.AuditQuery) (store.AuditPage, error) {
	return s.store.QueryAudit(ctx, q)
}

// ExportSubject returns everything the school's store keeps about one
// person; store.ErrNotFound when it keeps nothing.
func (s *Server) ExportSubject(ctx context.Context, subject string) (*store.SubjectData, error) {
	if subject == "" || len(subject) > MaxClientIDLen {
		return nil, store.ErrNotFound
	}
	return s.store.ExportSubject(ctx, subject)
}

// EraseSubject deletes everything the school's store keeps about one
// person, in one transaction that leaves one subject_erased event naming
// no one. Their tokens stop here at once and at the site's other
// instances as any revocation does. store.ErrNotFound: nothing was kept
// (an unknown person, or one erased already).
func (s *Server) EraseSubject(ctx context.Context, subject string) (*store.Erased, error) {
	if subject == "" || len(subject) > MaxClientIDLen {
		return nil, store.ErrNotFound
	}
	ctx, _ = s.auditContext(ctx)
	n, err := s.store.EraseSubject(ctx, subject)
	if err != nil {
		return nil, err
	}
	s.cache.purge()
	return n, nil
}
