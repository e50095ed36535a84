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
	"github.com/schoolgate/schoolgate/sitepath"
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
		s.unavailablePage(w, r, false, retryReload, "storing the pending authorization", err)
		return
	}
	view := consentView{
		School:       s.schoolName(),
		Origin:       s.cfg.Issuer,
		ClientName:   displayName(c),
		ClientHost:   clientHost(c, req.RedirectURI),
		RedirectHost: hostOf(req.RedirectURI),
		Person:       personLabel(id),
		Action:       sitepath.Consent,
		RequestID:    p.ID,
		CSRF:         csrf,
		Approved:     coversAll(prior, req.Scopes),
		AskEachTime:  !redirectProvesClient(c, req.RedirectURI),
		Trust:        trustOf(c),
		Applications: sitepath.AccountApplications,
	}
	lang := s.pageLang(r)
	for _, sc := range req.Scopes {
		view.Scopes = append(view.Scopes, scopeView{sc, scopeWords(lang, sc), slices.Contains(prior, sc)})
	}
	page, err := renderPage(consentTmpl.in(lang), view)
	if err != nil {
		s.cfg.Logger.Error("rendering the consent page", "error", err)
		s.errorPage(w, r, http.StatusInternalServerError, "error.not_shown")
		return
	}
	setPageHeaders(w, " "+originOf(req.RedirectURI))
	setLanguageHeaders(w, lang)
	_, _ = w.Write(page)
}

// consentView is what the consent page shows: who asks (the client, and
// the host that vouches for it), for which school and person, and what.
type consentView struct {
	// School is the school's name, Origin the site it is asked for.
	School, Origin                               string
	ClientName, ClientHost, RedirectHost, Person string
	Scopes                                       []scopeView
	Action, RequestID, CSRF                      string
	// Approved: the person approved every scope before. AskEachTime: the
	// redirect URI does not prove the client, which is why they are asked
	// again.
	Approved, AskEachTime bool
	// Trust is who vouches for the application (trustOf); Applications
	// is the page where the person can remove its access later.
	Trust, Applications string
}

// The consent page's trust cues: an application the school set up (a
// vendor in the configuration, a member application an operator
// created), a metadata-document client an operator reviewed, or one
// nobody at the school looked at (self-registered, or a metadata
// document not reviewed), which the page warns about, naming the host it
// comes from (clientHost).
const (
	trustSchool     = "school"
	trustReviewed   = "reviewed"
	trustUnreviewed = "unreviewed"
)

func trustOf(c *store.Client) string {
	switch {
	case c.Kind == store.KindVendor, c.Kind == store.KindApp:
		return trustSchool
	case c.Kind == store.KindMetadata && c.Reviewed:
		return trustReviewed
	}
	return trustUnreviewed
}

// scopeView is one requested scope; Before marks one approved before.
type scopeView struct {
	Name, Words string
	Before      bool
}

// schoolName is the name the consent page asks for: the configured one,
// else the origin.
func (s *Server) schoolName() string {
	if s.cfg.SchoolName != nil {
		if name := strings.TrimSpace(s.cfg.SchoolName()); name != "" {
			return name
		}
	}
	return s.cfg.Issuer
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
		s.unavailablePage(w, r, false, retryForm, "taking the pending authorization", err)
		return
	}
	if subtle.ConstantTimeCompare([]byte(hashToken(r.PostForm.Get("csrf_token"))), []byte(p.CSRFHash)) != 1 ||
		s.cfg.Now().After(p.ExpiresAt) {
		s.errorPage(w, r, http.StatusForbidden, "error.form_invalid")
		return
	}
	id, err := s.lookupSession(r.Context(), r)
	if err != nil || id == nil || id.Subject != p.Identity.Subject {
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

// clientHost is the host that vouches for the client: the document host
// of a metadata-document client, else the redirect host.
func clientHost(c *store.Client, redirectURI string) string {
	if c.Kind == store.KindMetadata {
		return hostOf(c.ID)
	}
	return hostOf(redirectURI)
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Host
}

func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

func personLabel(id *store.Identity) string {
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
