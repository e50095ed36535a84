package store

import (
	"context"
	"errors"
	"time"
)

// The audit trail: one event per security-relevant action, stored in the
// transaction of the change it describes, so that no change is kept
// without its event and no event tells of a change that rolled back.
//
// The protocol code does not pass events as arguments. It attaches an
// Audit to the request's context (WithAudit) and records the events of
// the action it is about to store (Audit.Record); the next store method
// that writes, called with that context, stores them in its transaction
// and hands them back as stored (Audit.Log sees each once). What only the
// store can tell, it records itself in the same way: a code redeemed or
// replayed and the grant that replay revoked, a refresh token rotated or
// reused, how many grants a disconnect or a deletion ended.

// Audit event types.
const (
	EventConsentGranted  = "consent_granted"
	EventConsentDenied   = "consent_denied"
	EventCodeIssued      = "code_issued"
	EventCodeRedeemed    = "code_redeemed"     // recorded by the store
	EventCodeReplay      = "code_replay"       // recorded by the store, Target the grant revoked
	EventTokenRefreshed  = "token_refreshed"   // recorded by the store
	EventRefreshReuse    = "refresh_reuse"     // recorded by the store, Target the grant revoked
	EventTokenRevoked    = "token_revoked"     // by its client (RFC 7009)
	EventDisconnected    = "app_disconnected"  // by the member or an operator
	EventClientCreated   = "client_registered" // Detail the kind
	EventClientDeleted   = "client_deleted"
	EventSecretRotated   = "client_secret_rotated"
	EventMemberAppCreate = "member_app_created"
	EventKeyRotated      = "key_rotated"
	EventMCPConnections  = "mcp_connections_switched"
	EventSubjectErased   = "subject_erased" // recorded by the store, names no one
)

// EventTypes are the types a query may filter by.
var EventTypes = []string{EventConsentGranted, EventConsentDenied, EventCodeIssued,
	EventCodeRedeemed, EventCodeReplay, EventTokenRefreshed, EventRefreshReuse,
	EventTokenRevoked, EventDisconnected, EventClientCreated, EventClientDeleted,
	EventSecretRotated, EventMemberAppCreate, EventKeyRotated, EventMCPConnections,
	EventSubjectErased}

// Actors: who acted.
const (
	ActorMember   = "member"    // the person the event is about, signed in
	ActorClient   = "client"    // an application, at the token or revocation endpoint
	ActorOperator = "operator"  // a school operator in the admin area (ActorSub names them)
	ActorAdminAPI = "admin_api" // the platform's admin API or CLI
	ActorSystem   = "system"    // the gateway itself
)

// AuditEvent is one stored event. It is compact on purpose: identifiers,
// never tokens, codes or secrets, and a grant by its id.
type AuditEvent struct {
	// ID is the store's, unique in the site; empty until stored.
	ID   string    `json:"id,omitempty"`
	Time time.Time `json:"time"`
	Type string    `json:"type"`
	// Subject is the person the event concerns; ClientID the application.
	Subject  string `json:"sub,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	// Actor is one of the Actor constants; ActorSub the operator's subject
	// when an operator acted.
	Actor    string `json:"actor,omitempty"`
	ActorSub string `json:"actor_sub,omitempty"`
	// Target is what the action changed: a grant id, a client id, a key id.
	Target  string `json:"target,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	// Grants is how many grants the action ended, when it ended any.
	Grants    int    `json:"grants,omitempty"`
	Detail    string `json:"detail,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	ClientIP  string `json:"client_ip,omitempty"`
}

// Names reports whether the event names subject, as the person concerned
// or as the operator who acted.
func (e *AuditEvent) Names(subject string) bool {
	return subject != "" && (e.Subject == subject || e.ActorSub == subject)
}

// Audit is one request's audit context and the events it has recorded
// and not yet seen stored. It belongs to one request, used by one
// goroutine at a time.
type Audit struct {
	// RequestID names the request in its events; NewRequestID, when set,
	// gives it on first use instead, for a request id that costs
	// something to make (Caddy's is a random UUID) and most requests,
	// recording nothing, never need.
	RequestID    string
	NewRequestID func() string
	ClientIP     string
	// Actor and ActorSub stamp events recorded without an actor: who
	// the request acts for, once it is known (an operator signed in to
	// the admin area, the admin API).
	Actor, ActorSub string
	// Now stamps events recorded without a time; nil is time.Now.
	Now func() time.Time
	// Log, when set, is called once for every event stored under this
	// context, after its transaction committed.
	Log func(AuditEvent)

	pending []AuditEvent
}

type auditKey struct{}

// WithAudit attaches a to ctx: the store methods called with the result
// store a's recorded events in their transactions.
func WithAudit(ctx context.Context, a *Audit) context.Context {
	return context.WithValue(ctx, auditKey{}, a)
}

// AuditOf returns the Audit attached to ctx, or nil.
func AuditOf(ctx context.Context) *Audit {
	a, _ := ctx.Value(auditKey{}).(*Audit)
	return a
}

// Record stamps e with the request's time, id and address and keeps it for
// the next store method that writes.
func (a *Audit) Record(e AuditEvent) {
	a.pending = append(a.pending, a.stamp(e))
}

// ID is the request's id, made on first use by NewRequestID.
func (a *Audit) ID() string {
	if a.RequestID == "" && a.NewRequestID != nil {
		a.RequestID, a.NewRequestID = a.NewRequestID(), nil
	}
	return a.RequestID
}

func (a *Audit) stamp(e AuditEvent) AuditEvent {
	if a == nil {
		if e.Time.IsZero() {
			e.Time = time.Now()
		}
		return e
	}
	if e.Time.IsZero() {
		if a.Now != nil {
			e.Time = a.Now()
		} else {
			e.Time = time.Now()
		}
	}
	if e.RequestID == "" {
		e.RequestID = a.ID()
	}
	if e.ClientIP == "" {
		e.ClientIP = a.ClientIP
	}
	if e.Actor == "" {
		e.Actor, e.ActorSub = a.Actor, a.ActorSub
	}
	return e
}

// AuditTx is the events one store transaction stores. A store begins one
// per attempt of the transaction (BeginAudit), adds the events it decides
// itself, writes Events before it commits and calls Committed after.
type AuditTx struct {
	a *Audit
	// Events are the request's recorded events, then the store's own.
	Events []AuditEvent
	taken  int
}

// BeginAudit starts the events of one attempt of a transaction with those
// recorded on ctx's Audit. It changes nothing outside: an attempt rolled
// back and run again begins anew.
func BeginAudit(ctx context.Context) *AuditTx {
	a := AuditOf(ctx)
	t := &AuditTx{a: a}
	if a != nil {
		t.Events = append(t.Events, a.pending...)
		t.taken = len(a.pending)
	}
	return t
}

// Add records an event the store decided, stamped with the request's
// context.
func (t *AuditTx) Add(e AuditEvent) { t.Events = append(t.Events, t.a.stamp(e)) }

// Ended sets on the request's recorded events how many grants the
// transaction ended.
func (t *AuditTx) Ended(n int) {
	for i := range t.taken {
		t.Events[i].Grants = n
	}
}

// OfClient sets the client on the request's recorded events that name
// none: the store found it (a grant ended by its id).
func (t *AuditTx) OfClient(id string) {
	for i := range t.taken {
		if t.Events[i].ClientID == "" {
			t.Events[i].ClientID = id
		}
	}
}

// Discard drops the request's recorded events: the call stored nothing
// they tell of (a creation that found its client existing).
func (t *AuditTx) Discard() { t.Events = t.Events[t.taken:]; t.taken = 0 }

// Committed tells the request's Audit that the events are stored: they
// leave its pending list and go to its Log.
func (t *AuditTx) Committed() {
	if t == nil || t.a == nil {
		return
	}
	t.a.pending = nil
	if t.a.Log != nil {
		for _, e := range t.Events {
			t.a.Log(e)
		}
	}
}

// AuditStore keeps the audit trail and answers for a person's data.
type AuditStore interface {
	// RecordAudit stores the events recorded on ctx in a transaction of
	// their own, for an action that changes nothing else (a consent
	// denied: its pending request was taken before the person's answer
	// was read).
	RecordAudit(ctx context.Context) error
	// QueryAudit returns a page of events, newest first, that match every
	// field q sets. A page of Limit events carries the cursor of the next.
	QueryAudit(ctx context.Context, q AuditQuery) (AuditPage, error)
	// PurgeAudit deletes the events older than before and returns how many.
	// A store may do it in several transactions, each whole.
	PurgeAudit(ctx context.Context, before time.Time) (int, error)
	// ExportSubject returns everything stored about subject, the
	// connection steps naming them too. A subject of whom nothing is
	// stored is ErrNotFound.
	ExportSubject(ctx context.Context, subject string) (*SubjectData, error)
	// EraseSubject deletes, in one transaction, subject's consents,
	// grants (revoked first, so their tokens stop everywhere), tokens,
	// codes, pending requests, the audit events that name them and the
	// connection steps of theirs (steps.go), and stores one EventSubjectErased that names no one. A subject of whom
	// nothing is stored (never known, or erased already) is ErrNotFound,
	// and nothing is written: erasing again changes nothing.
	EraseSubject(ctx context.Context, subject string) (*Erased, error)
}

// AuditQuery selects events. Every set field must match; Subject matches
// the person concerned or the operator who acted.
type AuditQuery struct {
	Subject  string
	ClientID string
	Type     string
	// Since (inclusive) and Until (exclusive) bound the time; zero is open.
	Since, Until time.Time
	// Limit bounds the page; stores cap it at MaxAuditPage.
	Limit int
	// Cursor is the previous page's Next; empty starts at the newest.
	Cursor string
}

// AuditPage is one page of events and where the next starts.
type AuditPage struct {
	Events []AuditEvent `json:"events"`
	// Next is the cursor of the next page, empty at the end.
	Next string `json:"next,omitempty"`
}

// MaxAuditPage bounds one page of events, whatever the caller asks.
const MaxAuditPage = 1000

// AuditLimit is the limit a store applies for a requested one: 100 when
// none is asked, at most MaxAuditPage.
func AuditLimit(n int) int {
	if n <= 0 {
		return 100
	}
	return min(n, MaxAuditPage)
}

// ErrBadCursor is a cursor no page of this store returned.
var ErrBadCursor = errors.New("bad audit cursor")

// Matches reports whether e passes q's filters other than Subject's index.
func (q *AuditQuery) Matches(e *AuditEvent) bool {
	return (q.Subject == "" || e.Names(q.Subject)) &&
		(q.ClientID == "" || e.ClientID == q.ClientID) &&
		(q.Type == "" || e.Type == q.Type) &&
		(q.Since.IsZero() || !e.Time.Before(q.Since)) &&
		(q.Until.IsZero() || e.Time.Before(q.Until))
}

// SubjectData is everything a store keeps about one person at one site.
type SubjectData struct {
	Subject  string           `json:"sub"`
	Consents []SubjectConsent `json:"consents"`
	// Grants are live and revoked ones not yet purged, with their
	// application, scopes, times and the identity snapshot they carry.
	Grants []*Grant `json:"grants"`
	// Tokens counts the access and refresh tokens under the grants; their
	// values are never stored, only hashes.
	Tokens  int `json:"tokens"`
	Codes   int `json:"codes"`
	Pending int `json:"pending_requests"`
	// Events are the audit events naming the person, newest first.
	Events []AuditEvent `json:"events"`
	// Steps are the connection steps refused for the person (steps.go),
	// by key.
	Steps []Step `json:"connection_steps,omitempty"`
}

// SubjectConsent is a consent remembered for one application.
type SubjectConsent struct {
	ClientID string `json:"client_id"`
	Consent
}

// Empty reports whether nothing is stored about the subject.
func (d *SubjectData) Empty() bool {
	return len(d.Consents) == 0 && len(d.Grants) == 0 && d.Tokens == 0 &&
		d.Codes == 0 && d.Pending == 0 && len(d.Events) == 0 && len(d.Steps) == 0
}

// Erased counts what EraseSubject deleted.
type Erased struct {
	Consents int `json:"consents"`
	Grants   int `json:"grants"`
	// Revoked is how many of the grants were live.
	Revoked int `json:"revoked"`
	Tokens  int `json:"tokens"`
	Codes   int `json:"codes"`
	Pending int `json:"pending_requests"`
	Events  int `json:"events"`
	// Steps counts the connection steps that named the person.
	Steps int `json:"connection_steps,omitempty"`
}

// Empty reports whether nothing was erased.
func (e *Erased) Empty() bool { return *e == Erased{} }

// Erased ends an erasure of subject that deleted n, inside its
// transaction: ErrNotFound when nothing was stored of them, else the
// request's events stop naming them and the erasure's own event, counts
// and no one named, is added.
func (t *AuditTx) Erased(subject string, n *Erased) error {
	if n.Empty() {
		return ErrNotFound
	}
	for i := range t.Events {
		if t.Events[i].Names(subject) {
			t.Events[i].Subject, t.Events[i].ActorSub = "", ""
		}
	}
	t.Add(AuditEvent{Type: EventSubjectErased, Actor: ActorAdminAPI, Outcome: "erased", Grants: n.Grants})
	return nil
}

// FoundSubject is an export's answer from what it read: ErrNotFound when
// nothing of the person is stored.
func FoundSubject(d *SubjectData, err error) (*SubjectData, error) {
	if err != nil {
		return nil, err
	}
	if d == nil || d.Empty() {
		return nil, ErrNotFound
	}
	return d, nil
}

// RedeemEvent is the event a store records for a code's redemption: the
// grant g it issued, or on a replay (g nil) the grant the replay revoked.
func RedeemEvent(o RedeemOutcome, c *Code, g *Grant) AuditEvent {
	if o == RedeemReplay || g == nil {
		return AuditEvent{Type: EventCodeReplay, Subject: c.Identity.Subject, ClientID: c.Request.ClientID,
			Actor: ActorClient, Target: c.GrantID, Outcome: "grant revoked", Grants: 1}
	}
	return AuditEvent{Type: EventCodeRedeemed, Subject: g.Identity.Subject, ClientID: g.ClientID,
		Actor: ActorClient, Target: g.ID, Outcome: "issued"}
}

// RotateEvent is the event a store records for a refresh token's
// rotation, or for its reuse and the grant that revoked.
func RotateEvent(o RotateOutcome, g *Grant, now time.Time) AuditEvent {
	e := AuditEvent{Time: now, Type: EventTokenRefreshed, Subject: g.Identity.Subject, ClientID: g.ClientID,
		Actor: ActorClient, Target: g.ID, Outcome: "issued"}
	switch o {
	case RotateAgain:
		e.Outcome = "issued again within grace"
	case RotateReplay:
		e.Type, e.Outcome, e.Grants = EventRefreshReuse, "grant revoked", 1
	}
	return e
}

// Pending reports whether events are recorded and not yet stored.
func (a *Audit) Pending() bool { return a != nil && len(a.pending) > 0 }
