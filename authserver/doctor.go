package authserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// The connection doctor's record (docs/operator.md, "Why can't this
// application connect?"): every step of an application's attempts to
// connect, the ones that went through and, for the ones that stopped,
// why, is noted here on the request path (noteStep: a map update in
// memory, no store call) and added to the store in the background
// (FlushSteps, every few seconds and when the school is let go of) as
// store.Step rows, counted per application, person, step and reason. The
// audit trail stores what changed; most of an attempt that fails changes
// nothing, which is why its steps are kept apart, bounded and short-lived.

// The steps, in the order an attempt goes through them.
const (
	StepMetadata     = "metadata"      // its Client ID Metadata Document fetched
	StepRegister     = "register"      // dynamic registration
	StepAuthorize    = "authorize"     // the authorization request checked
	StepLogin        = "login"         // sent to the school's sign-in page
	StepSignIn       = "signin"        // a signed-in person who may authorize it
	StepConsentShown = "consent_shown" // the consent page shown
	StepConsent      = "consent"       // the person's answer
	StepCode         = "code"          // an authorization code issued
	StepToken        = "token"         // the code exchanged for tokens
	StepUse          = "use"           // an access token used
	StepRefresh      = "refresh"       // a refresh token exchanged
)

// Steps are the steps in their order.
var Steps = []string{StepMetadata, StepRegister, StepAuthorize, StepLogin, StepSignIn, StepConsentShown,
	StepConsent, StepCode, StepToken, StepUse, StepRefresh}

// stepRank is a step's place in Steps.
func stepRank(step string) int {
	for i, s := range Steps {
		if s == step {
			return i
		}
	}
	return -1
}

// The reasons a step stops, each worded for people in every language
// (doctor.reason.<reason> in package i18n's messages).
const (
	ReasonMetadataURL     = "metadata_url"
	ReasonMetadataHost    = "metadata_host"
	ReasonMetadataFetch   = "metadata_fetch"
	ReasonMetadataStatus  = "metadata_status"
	ReasonMetadataSize    = "metadata_size"
	ReasonMetadataContent = "metadata_content"
	ReasonMetadataLimit   = "metadata_limit"

	ReasonUnknownClient     = store.ReasonUnknownClient
	ReasonNoClientID        = "client_id_missing"
	ReasonRepeatedParam     = "repeated_param"
	ReasonRedirectUnknown   = "redirect_uri_unregistered"
	ReasonRequestInvalid    = "request_invalid"
	ReasonResponseType      = "response_type"
	ReasonPKCE              = "pkce_missing"
	ReasonScopeMissing      = "scope_missing"
	ReasonScopeUnknown      = "scope_unknown"
	ReasonScopeNotAllowed   = "scope_not_allowed"
	ReasonScopeMemberOnly   = "scope_member_only"
	ReasonOfflineOnly       = "scope_offline_only"
	ReasonResourceMissing   = "resource_missing"
	ReasonResourceWrong     = "resource_wrong"
	ReasonUnavailable       = "unavailable"
	ReasonLoginRequired     = "login_required"
	ReasonNotOperator       = "person_not_operator"
	ReasonNoRole            = "person_no_role"
	ReasonConsentRequired   = "consent_required"
	ReasonConsentDenied     = "consent_denied"
	ReasonConsentForm       = "consent_form"
	ReasonClientAuth        = "client_auth"
	ReasonGrantType         = "grant_type"
	ReasonRateLimited       = "rate_limited"
	ReasonDPoPProof         = "dpop_proof"
	ReasonDPoPRequired      = "dpop_required"
	ReasonCodeUnknown       = "code_unknown"
	ReasonCodeExpired       = "code_expired"
	ReasonCodeOtherClient   = "code_other_client"
	ReasonRedirectMismatch  = "redirect_mismatch"
	ReasonVerifierMismatch  = "verifier_mismatch"
	ReasonCodeDPoPKey       = "code_dpop_key"
	ReasonCodeReplayed      = "code_replayed"
	ReasonTokenUnknown      = "token_unknown"
	ReasonTokenExpired      = "token_expired"
	ReasonTokenRevoked      = "token_revoked"
	ReasonWrongOrigin       = "wrong_origin"
	ReasonTokenScheme       = "token_scheme"
	ReasonAudience          = "wrong_audience"
	ReasonScopeInsufficient = "insufficient_scope"
	ReasonRefreshReuse      = "refresh_reuse"
	ReasonRefreshWrongKey   = "refresh_wrong_key"
	ReasonScopeWiden        = "scope_widen"
	ReasonScopesGone        = "scopes_gone"
	ReasonGrantInvalid      = "grant_invalid"
)

// Reasons are every reason, for the tests that every language words them.
var Reasons = []string{ReasonMetadataURL, ReasonMetadataHost, ReasonMetadataFetch, ReasonMetadataStatus,
	ReasonMetadataSize, ReasonMetadataContent, ReasonMetadataLimit, ReasonUnknownClient, ReasonNoClientID,
	ReasonRepeatedParam, ReasonRedirectUnknown, ReasonRequestInvalid, ReasonResponseType, ReasonPKCE,
	ReasonScopeMissing, ReasonScopeUnknown, ReasonScopeNotAllowed, ReasonScopeMemberOnly, ReasonOfflineOnly,
	ReasonResourceMissing, ReasonResourceWrong, ReasonUnavailable, ReasonLoginRequired, ReasonNotOperator,
	ReasonNoRole, ReasonConsentRequired, ReasonConsentDenied, ReasonConsentForm, ReasonClientAuth,
	ReasonGrantType, ReasonRateLimited, ReasonDPoPProof, ReasonDPoPRequired, ReasonCodeUnknown,
	ReasonCodeExpired, ReasonCodeOtherClient, ReasonRedirectMismatch, ReasonVerifierMismatch,
	ReasonCodeDPoPKey, ReasonCodeReplayed, ReasonTokenUnknown, ReasonTokenExpired, ReasonTokenRevoked,
	ReasonWrongOrigin, ReasonTokenScheme, ReasonAudience, ReasonScopeInsufficient, ReasonRefreshReuse,
	ReasonRefreshWrongKey, ReasonScopeWiden, ReasonScopesGone, ReasonGrantInvalid}

// Bounds of the steps' retention: an hour, so that what just happened
// can be looked into, and 90 days.
const (
	DefaultStepRetention = 7 * 24 * time.Hour
	MinStepRetention     = time.Hour
	MaxStepRetention     = 90 * 24 * time.Hour
)

// CheckStepRetention refuses a retention outside its bounds; zero is the
// default.
func CheckStepRetention(d time.Duration) error {
	if d != 0 && (d < MinStepRetention || d > MaxStepRetention) {
		return fmt.Errorf("%v is outside %v to %v (zero keeps the default, %v)", d, MinStepRetention, MaxStepRetention, DefaultStepRetention)
	}
	return nil
}

// maxPendingSteps bounds the rows a school keeps in memory between two
// flushes: a flood of attempts that all end alike is one row, and a flood
// of made-up client ids past the bound is counted as dropped, not kept.
const maxPendingSteps = 1024

// stepLog is a school's steps noted and not yet stored.
type stepLog struct {
	mu      sync.Mutex
	pending map[store.StepKey]*store.Step
	// dropped counts the attempts not kept for want of room.
	dropped uint64
}

// add merges st into its pending row.
func (l *stepLog) add(st *store.Step) {
	k := st.Key()
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.pending[k]; ok {
		p.Merge(st)
		return
	}
	if len(l.pending) >= maxPendingSteps {
		l.dropped += uint64(st.Count)
		return
	}
	if l.pending == nil {
		l.pending = make(map[store.StepKey]*store.Step)
	}
	row := *st
	l.pending[k] = &row
}

// drain takes every pending row.
func (l *stepLog) drain() ([]store.Step, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) == 0 && l.dropped == 0 {
		return nil, 0
	}
	out := make([]store.Step, 0, len(l.pending))
	for _, p := range l.pending {
		out = append(out, *p)
	}
	clear(l.pending)
	dropped := l.dropped
	l.dropped = 0
	return out, dropped
}

// peek copies the pending rows that match.
func (l *stepLog) peek(match func(*store.Step) bool) []store.Step {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []store.Step
	for _, p := range l.pending {
		if match(p) {
			out = append(out, *p)
		}
	}
	return out
}

// noteStep notes one attempt at a step: passed when reason is empty,
// else stopped for reason with the RFC error the client got. detail is
// what is safe to keep of the attempt, never a token, code, verifier,
// secret or e-mail; subject only on a refused step, and only when known.
func (s *Server) noteStep(step, clientID, subject, reason, errCode, detail string) {
	if clientID == "" {
		return // nothing to look it up by
	}
	if reason == "" {
		subject, errCode = "", ""
	}
	now := s.cfg.Now()
	st := store.Step{ClientID: clientID, Subject: subject, Name: step, Reason: reason, Error: errCode,
		Detail: detail, Count: 1, First: now, Last: now}
	store.ClipStep(&st)
	s.steps.add(&st)
}

// passed notes a step that went through.
func (s *Server) passed(step, clientID, detail string) {
	s.noteStep(step, clientID, "", "", "", detail)
}

// FlushSteps adds the steps noted and not yet stored to the store. The
// school calls it every few seconds and when it is let go of; what a
// failing store did not take is kept for the next, within the bound.
func (s *Server) FlushSteps(ctx context.Context) error {
	rows, dropped := s.steps.drain()
	if dropped > 0 {
		s.cfg.Logger.Warn("connection doctor: attempts not recorded, too many different ones between two flushes",
			"attempts", dropped, "bound", maxPendingSteps)
	}
	if len(rows) == 0 {
		return nil
	}
	if err := s.store.AddSteps(ctx, rows); err != nil {
		for i := range rows {
			s.steps.add(&rows[i])
		}
		return err
	}
	return nil
}

// purgeSteps is the janitor's: the rows past the retention go.
func (s *Server) purgeSteps(ctx context.Context) {
	if _, err := s.store.PurgeSteps(ctx, s.cfg.Now().Add(-s.cfg.DoctorRetention.D())); err != nil {
		s.cfg.Logger.Warn("purging connection steps past their retention", "error", err)
	}
}

// why is the reason an error answer gives the doctor: its own, else the
// one its code implies.
func (e *oauthError) why() (reason, detail string) {
	if e.reason != "" {
		return e.reason, e.detail
	}
	switch {
	case e.Status == 429:
		return ReasonRateLimited, ""
	case e.Status == 503 || e.Code == "temporarily_unavailable":
		return ReasonUnavailable, ""
	}
	switch e.Code {
	case "invalid_client":
		return ReasonClientAuth, e.Description
	case "unsupported_grant_type":
		return ReasonGrantType, e.Description
	case "invalid_dpop_proof":
		return ReasonDPoPProof, e.Description
	case "invalid_target":
		return ReasonResourceWrong, e.Description
	case "invalid_grant":
		return ReasonGrantInvalid, e.Description
	}
	return ReasonRequestInvalid, e.Description
}

// because gives e its reason and detail for the doctor.
func (e *oauthError) because(reason, detail string) *oauthError {
	e.reason, e.detail = reason, detail
	return e
}

// noteRefused notes a refused step from its answer; a use_dpop_nonce is
// not a refusal but a round of DPoP, which the client repeats at once.
func (s *Server) noteRefused(step, clientID string, e *oauthError) {
	if e.Code == "use_dpop_nonce" {
		return
	}
	reason, detail := e.why()
	s.noteStep(step, clientID, e.subject, reason, e.Code, detail)
}

// noteUseRefused is the guard's Refused: a valid token refused at a
// protected resource, for another origin, its binding or its scopes.
func (s *Server) noteUseRefused(tok *policy.Token, ch *policy.Challenge) {
	if ch.Error == policy.ErrUseDPoPNonce || ch.Status >= http.StatusInternalServerError {
		return
	}
	reason, detail := ReasonTokenScheme, ""
	switch {
	case ch.Error == "insufficient_scope" && strings.Contains(ch.Description, " token; this one was issued to a "):
		reason = ReasonAudience
	case ch.Error == "insufficient_scope":
		reason, detail = ReasonScopeInsufficient, missingScope(tok, ch.Scope)
	case strings.Contains(ch.Description, "different origin"):
		reason, detail = ReasonWrongOrigin, tok.Resource
	case ch.Error == policy.ErrInvalidDPoPProof:
		reason = ReasonDPoPProof
	}
	s.noteStep(StepUse, tok.ClientID, tok.Subject, reason, ch.Error, detail)
}

// missingScope names the first scope of need the token lacks.
func missingScope(tok *policy.Token, need string) string {
	for _, sc := range strings.Fields(need) {
		if !tok.HasScope(sc) {
			return sc
		}
	}
	return need
}

// DoctorWindow is how far back the member's view looks (Attempts).
const DoctorWindow = 24 * time.Hour

// ClientSteps returns the connection doctor's rows of one application,
// the stored ones with those noted here and not yet stored, ordered by
// their last attempt: on a shared store, every instance's flushed ones.
func (s *Server) ClientSteps(ctx context.Context, clientID string) ([]store.Step, error) {
	return s.mergedSteps(ctx, store.StepQuery{ClientID: clientID},
		func(st *store.Step) bool { return st.ClientID == clientID })
}

// Attempts returns the refused steps of the applications that tried to
// connect for the person with subject in the last DoctorWindow: the
// member's own view, their attempts only.
func (s *Server) Attempts(ctx context.Context, subject string) ([]store.Step, error) {
	if subject == "" {
		return nil, nil
	}
	since := s.cfg.Now().Add(-DoctorWindow)
	return s.mergedSteps(ctx, store.StepQuery{Subject: subject, Since: since},
		func(st *store.Step) bool { return st.Subject == subject && !st.Last.Before(since) })
}

func (s *Server) mergedSteps(ctx context.Context, q store.StepQuery, match func(*store.Step) bool) ([]store.Step, error) {
	rows, err := s.store.QuerySteps(ctx, q)
	if err != nil {
		return nil, err
	}
	pending := s.steps.peek(match)
	if len(pending) == 0 {
		return rows, nil
	}
	byKey := make(map[store.StepKey]int, len(rows))
	for i := range rows {
		byKey[rows[i].Key()] = i
	}
	for i := range pending {
		if j, ok := byKey[pending[i].Key()]; ok {
			rows[j].Merge(&pending[i])
			continue
		}
		rows = append(rows, pending[i])
	}
	return store.LatestSteps(rows), nil
}
