package authserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// showConsent parks the request server-side and shows the consent page.
// The form carries the request id and a CSRF token whose hash is kept with
// the request, so a forged form cannot approve anything. prior is what the
// person approved before: those scopes are marked, and when they cover the
// request the page says why it asks again.
func (s *Server) showConsent(w http.ResponseWriter, r *http.Request, c *store.Client, req *store.AuthRequest, id *store.Identity, prior []string) {
	now := s.cfg.Now()
	csrf := randomString()
	p := &store.PendingAuth{ID: randomString(), CSRFHash: hashToken(csrf), Request: *req,
		Identity: *id, ExpiresAt: now.Add(s.cfg.ConsentTTL)}
	if err := s.store.PutPending(r.Context(), p); err != nil {
		s.unavailablePage(w, r, retryReload, "storing the pending authorization", err)
		return
	}
	s.passed(StepConsentShown, c.ID, "")
	s.pages.Consent(w, r, &ConsentPage{
		Client:      clientInfo(c),
		Scopes:      req.Scopes,
		RedirectURI: req.RedirectURI,
		Person:      id,
		Prior:       prior,
		Approved:    coversAll(prior, req.Scopes),
		AskEachTime: !redirectProvesClient(c, req.RedirectURI),
		RequestID:   p.ID,
		CSRF:        csrf,
	})
}

// handleConsent serves the consent form's POST.
func (s *Server) handleConsent(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		s.errorPage(w, r, http.StatusMethodNotAllowed, "error.use_consent_form")
		return
	}
	// A browser names the page that submitted the form; anything but this
	// site is a cross-site forgery.
	if o := r.Header.Get("Origin"); o != "" && o != "null" && !policy.SameOrigin(o, s.cfg.Issuer) {
		s.errorPage(w, r, http.StatusForbidden, "error.cross_site")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "error.form_unreadable")
		return
	}
	p, err := s.store.TakePending(r.Context(), r.PostForm.Get("request"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.errorPage(w, r, http.StatusBadRequest, "error.request_gone")
		return
	case err != nil:
		// Nothing was taken, so the same form may be sent again.
		s.unavailablePage(w, r, retryForm, "taking the pending authorization", err)
		return
	}
	if subtle.ConstantTimeCompare([]byte(hashToken(r.PostForm.Get("csrf_token"))), []byte(p.CSRFHash)) != 1 ||
		s.cfg.Now().After(p.ExpiresAt) {
		s.noteStep(StepConsent, p.Request.ClientID, p.Identity.Subject, ReasonConsentForm, "", "expired or forged form")
		s.errorPage(w, r, http.StatusForbidden, "error.form_invalid")
		return
	}
	id, err := s.Session(r.Context(), r)
	if err != nil || id == nil || id.Subject != p.Identity.Subject {
		s.noteStep(StepConsent, p.Request.ClientID, p.Identity.Subject, ReasonConsentForm, "", "signed in as another person")
		s.errorPage(w, r, http.StatusForbidden, "error.other_person")
		return
	}
	req := &p.Request
	consent := store.AuditEvent{Type: store.EventConsentGranted, Subject: id.Subject, ClientID: req.ClientID,
		Actor: store.ActorMember, Detail: strings.Join(req.Scopes, " ")}
	if r.PostForm.Get("decision") != "approve" {
		// Nothing is stored for a denial but its event; the pending
		// request was taken above.
		consent.Type, consent.Outcome = store.EventConsentDenied, "denied"
		s.noteStep(StepConsent, req.ClientID, id.Subject, ReasonConsentDenied, "access_denied", "")
		if err := s.store.RecordAudit(s.record(r.Context(), consent)); err != nil {
			s.cfg.Logger.Warn("recording a denied consent", "error", err)
		}
		s.redirectTo(w, r, req.RedirectURI, http.StatusSeeOther, url.Values{
			"error": {"access_denied"}, "error_description": {"the person denied the request"}, "state": {req.State}})
		return
	}
	// The event rides with the consent remembered, or with the code
	// should remembering fail.
	r = r.WithContext(s.record(r.Context(), consent))
	s.passed(StepConsent, req.ClientID, strings.Join(req.Scopes, " "))
	s.rememberConsent(r.Context(), req.ClientID, id.Subject, req.Scopes)
	// The request was taken: should the code not be stored, the form
	// cannot be sent again.
	s.issueCode(w, r, req, id, http.StatusSeeOther, retryStart)
}

// rememberConsent adds the scopes to what the person approved before. It
// is a convenience for next time, so a store failure only skips it.
func (s *Server) rememberConsent(ctx context.Context, clientID, subject string, scopes []string) {
	granted := slices.Clone(scopes)
	prev, err := s.store.GetConsent(ctx, clientID, subject)
	switch {
	case err == nil:
		granted = dedupe(append(prev.Scopes, scopes...))
	case !errors.Is(err, store.ErrNotFound):
		// Storing these scopes alone would forget the earlier ones.
		s.cfg.Logger.Warn("remembering consent: reading the earlier one", "error", err)
		return
	}
	if err := s.store.PutConsent(ctx, clientID, subject, &store.Consent{Scopes: granted, GrantedAt: s.cfg.Now()}); err != nil {
		s.cfg.Logger.Warn("remembering consent", "error", err)
	}
}

func displayName(c *store.Client) string {
	if c.Name != "" {
		return c.Name
	}
	return c.ID
}

// PersonLabel is how the pages and the operator's lists name a person:
// their name and address, else either, else their subject.
func PersonLabel(id *store.Identity) string {
	switch {
	case id.Name != "" && id.Email != "":
		return id.Name + " <" + id.Email + ">"
	case id.Email != "":
		return id.Email
	case id.Name != "":
		return id.Name
	}
	return id.Subject
}
