package authserver

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// singleParams may appear at most once in an authorization request
// (RFC 6749 §3.1).
var singleParams = []string{"response_type", "client_id", "redirect_uri", "scope", "state",
	"code_challenge", "code_challenge_method", "nonce", "prompt", "dpop_jkt"}

// authzError is an error sent back to the client's redirect URI, with
// the connection doctor's reason and detail (doctor.go).
type authzError struct {
	code, desc     string
	reason, detail string
}

// handleAuthorize serves GET /oauth/authorize.
func (s *Server) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		s.errorPage(w, r, http.StatusMethodNotAllowed, "error.get_only")
		return
	}
	q := r.URL.Query()
	client, redirectURI, ok := s.authorizeClient(w, r, q)
	if !ok {
		return
	}
	state := q.Get("state")
	req, aerr := s.parseAuthRequest(q, client)
	if aerr != nil {
		s.noteStep(StepAuthorize, client.ID, "", aerr.reason, aerr.code, aerr.detail)
		s.redirectError(w, r, redirectURI, state, aerr.code, aerr.desc)
		return
	}
	req.RedirectURI, req.State = redirectURI, state
	s.passed(StepAuthorize, client.ID, strings.Join(req.Scopes, " "))

	id, err := s.Session(r.Context(), r)
	if err != nil {
		s.cfg.Logger.Error("session lookup failed", "error", err)
		s.noteStep(StepSignIn, client.ID, "", ReasonUnavailable, "temporarily_unavailable", "")
		s.redirectError(w, r, redirectURI, state, "temporarily_unavailable", "the school site could not confirm who is signed in")
		return
	}
	if id == nil {
		if q.Get("prompt") == "none" {
			s.noteStep(StepSignIn, client.ID, "", ReasonLoginRequired, "login_required", "prompt=none")
			s.redirectError(w, r, redirectURI, state, "login_required", "nobody is signed in")
			return
		}
		s.passed(StepLogin, client.ID, "")
		s.redirectToLogin(w, r)
		return
	}
	if e := s.checkPerson(client, id); e != nil {
		s.noteStep(StepSignIn, client.ID, id.Subject, e.reason, e.code, "")
		s.redirectError(w, r, redirectURI, state, e.code, e.desc)
		return
	}
	s.passed(StepSignIn, client.ID, "")
	s.decideConsent(w, r, client, req, id, q.Get("prompt"))
}

// decideConsent answers at once from a remembered consent when the
// redirect URI proves the client (consentrule.go), and otherwise shows the
// consent page, or refuses with consent_required under prompt=none.
func (s *Server) decideConsent(w http.ResponseWriter, r *http.Request, client *store.Client, req *store.AuthRequest, id *store.Identity, prompt string) {
	prior, err := s.priorConsent(r.Context(), client.ID, id.Subject)
	if err != nil {
		// Not "no consent": that would ask again, or refuse prompt=none
		// with consent_required, for a person who approved.
		s.unavailablePage(w, r, retryReload, "reading the remembered consent", err)
		return
	}
	remembered := coversAll(prior, req.Scopes)
	switch {
	case remembered && prompt != "consent" && redirectProvesClient(client, req.RedirectURI):
		s.issueCode(w, r, req, id, http.StatusFound, retryReload)
	case prompt == "none" && remembered:
		s.noteStep(StepConsent, client.ID, id.Subject, ReasonConsentRequired, "consent_required", "prompt=none")
		s.redirectError(w, r, req.RedirectURI, req.State, "consent_required",
			"this client's redirect URI does not prove its identity, so the person approves every authorization")
	case prompt == "none":
		s.noteStep(StepConsent, client.ID, id.Subject, ReasonConsentRequired, "consent_required", "prompt=none")
		s.redirectError(w, r, req.RedirectURI, req.State, "consent_required", "the person has not approved this client")
	default:
		s.showConsent(w, r, client, req, id, prior)
	}
}

// authorizeClient resolves the client and redirect URI. Failures here get
// an error page, never a redirect: the redirect target is not trusted.
func (s *Server) authorizeClient(w http.ResponseWriter, r *http.Request, q url.Values) (*store.Client, string, bool) {
	for _, p := range []string{"client_id", "redirect_uri"} {
		if len(q[p]) > 1 {
			s.noteStep(StepAuthorize, clip(q.Get("client_id")), "", ReasonRepeatedParam, "invalid_request", p)
			s.errorPage(w, r, http.StatusBadRequest, "error.repeated_param", "param", p)
			return nil, "", false
		}
	}
	clientID := q.Get("client_id")
	if clientID == "" {
		s.errorPage(w, r, http.StatusBadRequest, "error.no_client_id")
		return nil, "", false
	}
	client, err := s.client(r.Context(), clientID)
	var me *metadataError
	if errors.As(err, &me) {
		// The person reads why in their language; the document's fault,
		// which only its developer can act on, follows as it is.
		s.showError(w, r, http.StatusBadRequest, ErrorPage{Key: "error.client_metadata",
			Detail: "invalid_client_metadata: " + me.msg})
		return nil, "", false
	}
	switch {
	case errors.Is(err, errUnknownClient):
		s.noteStep(StepAuthorize, clip(clientID), "", ReasonUnknownClient, "invalid_client", "")
		s.errorPage(w, r, http.StatusBadRequest, "error.unknown_client")
		return nil, "", false
	case err != nil:
		s.unavailablePage(w, r, retryReload, "looking up the client", err)
		return nil, "", false
	}
	redirectURI := q.Get("redirect_uri")
	if redirectURI == "" || !MatchRedirect(client, redirectURI) {
		// The client's own address, which its developer compares with
		// the registered ones: the usual difference is a slash or a port.
		s.noteStep(StepAuthorize, client.ID, "", ReasonRedirectUnknown, "invalid_request", redirectURI)
		s.errorPage(w, r, http.StatusBadRequest, "error.unknown_redirect")
		return nil, "", false
	}
	return client, redirectURI, true
}

// parseAuthRequest validates everything but the client and redirect URI.
func (s *Server) parseAuthRequest(q url.Values, client *store.Client) (*store.AuthRequest, *authzError) {
	for _, p := range singleParams {
		if len(q[p]) > 1 {
			return nil, &authzError{"invalid_request", "the " + p + " parameter is repeated", ReasonRepeatedParam, p}
		}
	}
	if q.Has("request") || q.Has("request_uri") {
		return nil, &authzError{"request_not_supported", "request objects are not supported", ReasonRequestInvalid, "request"}
	}
	switch rt := q.Get("response_type"); rt {
	case "code":
	case "":
		return nil, &authzError{"invalid_request", "response_type is required", ReasonResponseType, ""}
	default:
		return nil, &authzError{"unsupported_response_type", "only response_type=code is supported", ReasonResponseType, rt}
	}
	if m := q.Get("response_mode"); m != "" && m != "query" {
		return nil, &authzError{"invalid_request", "only response_mode=query is supported", ReasonRequestInvalid, "response_mode"}
	}
	switch m := q.Get("code_challenge_method"); m {
	case "S256":
	case "":
		return nil, &authzError{"invalid_request", "code_challenge_method=S256 is required", ReasonPKCE, "code_challenge_method"}
	default:
		return nil, &authzError{"invalid_request", "code_challenge_method must be S256", ReasonPKCE, "code_challenge_method"}
	}
	challenge := q.Get("code_challenge")
	if !validChallenge(challenge) {
		return nil, &authzError{"invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)", ReasonPKCE, "code_challenge"}
	}
	scopes := strings.Fields(q.Get("scope"))
	if len(scopes) == 0 {
		return nil, &authzError{"invalid_request", "scope is required", ReasonScopeMissing, ""}
	}
	if e := checkScopes(client, scopes); e != nil {
		return nil, &authzError{e.Code, e.Description, e.reason, e.detail}
	}
	resource, e := s.checkResource(q["resource"], client.Audience)
	if e != nil {
		return nil, &authzError{e.Code, e.Description, e.reason, e.detail}
	}
	// RFC 9449 §10: dpop_jkt binds the code to a key. A school with DPoP
	// off knows no such parameter and ignores it, as unknown ones are.
	var jkt string
	if s.dpop.On() && q.Has("dpop_jkt") {
		if jkt = q.Get("dpop_jkt"); !validJKT(jkt) {
			return nil, &authzError{"invalid_request", "dpop_jkt must be the base64url SHA-256 thumbprint of a key (43 characters)", ReasonRequestInvalid, "dpop_jkt"}
		}
	}
	return &store.AuthRequest{
		ClientID:      client.ID,
		Scopes:        dedupe(scopes),
		Resource:      resource,
		Nonce:         q.Get("nonce"),
		CodeChallenge: challenge,
		Audience:      client.Audience,
		DPoPJKT:       jkt,
	}, nil
}

// checkResource applies RFC 8707: the only resource is this origin,
// compared as an origin. Member tokens must name it; operator tokens are
// bound to it either way.
func (s *Server) checkResource(values []string, audience string) (string, *oauthError) {
	switch len(values) {
	case 0:
		if audience == store.AudienceMember {
			return "", errInvalidTarget("resource is required for member tokens; use "+s.cfg.Issuer).because(ReasonResourceMissing, "")
		}
		return s.cfg.Issuer, nil
	case 1:
		// The issuer is an origin's one spelling (validate), which parses
		// to itself: a resource spelled the same is the same origin with
		// no parse of either, and clients usually send it so.
		if values[0] == s.cfg.Issuer || policy.SameOrigin(values[0], s.cfg.Issuer) {
			return s.cfg.Issuer, nil
		}
		return "", errInvalidTarget("the only resource served here is "+s.cfg.Issuer).because(ReasonResourceWrong, clip(values[0]))
	default:
		return "", errInvalidTarget("only one resource may be requested").because(ReasonResourceWrong, "several")
	}
}

// checkPerson applies the audience rules to the signed-in person.
func (s *Server) checkPerson(c *store.Client, id *store.Identity) *authzError {
	if c.Audience == store.AudienceOperator && !id.IsOperator() {
		return &authzError{"access_denied", "this application needs a site operator; the signed-in person is not one", ReasonNotOperator, ""}
	}
	if c.Audience == store.AudienceMember && len(id.Roles) == 0 {
		return &authzError{"access_denied", "the signed-in person has no role at this school", ReasonNoRole, ""}
	}
	return nil
}

// redirectToLogin sends the browser to the legacy login page, which
// returns it here once signed in.
func (s *Server) redirectToLogin(w http.ResponseWriter, r *http.Request) {
	back := s.url(sitepath.Authorize) + "?" + r.URL.RawQuery
	u, err := url.Parse(s.LoginPage())
	if err != nil {
		s.errorPage(w, r, http.StatusInternalServerError, "error.login_misconfigured")
		return
	}
	q := u.Query()
	q.Set("return_to", back)
	u.RawQuery = q.Encode()
	noStore(w)
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// issueCode stores a new authorization code and redirects with it; retry
// tells the person how to try again should the store fail.
func (s *Server) issueCode(w http.ResponseWriter, r *http.Request, req *store.AuthRequest, id *store.Identity, status int, retry string) {
	now := s.cfg.Now()
	raw := newTimedToken(prefixCode, now)
	ctx := s.record(r.Context(), store.AuditEvent{Type: store.EventCodeIssued, Subject: id.Subject,
		ClientID: req.ClientID, Actor: store.ActorMember, Detail: strings.Join(req.Scopes, " ")})
	err := s.store.PutCode(ctx, tokenKey(raw), &store.Code{
		Request: *req, Identity: *id, AuthTime: now, ExpiresAt: now.Add(s.cfg.CodeTTL.D()),
	})
	if err != nil {
		s.unavailablePage(w, r, retry, "storing the authorization code", err)
		return
	}
	s.passed(StepCode, req.ClientID, "")
	s.redirectTo(w, r, req.RedirectURI, status, url.Values{"code": {raw}, "state": {req.State}})
}

// redirectError sends an authorization error to the client (RFC 6749
// §4.1.2.1) with the issuer (RFC 9207).
func (s *Server) redirectError(w http.ResponseWriter, r *http.Request, redirectURI, state, code, desc string) {
	s.redirectTo(w, r, redirectURI, http.StatusFound, url.Values{
		"error": {code}, "error_description": {errorText(desc)}, "state": {state},
	})
}

func (s *Server) redirectTo(w http.ResponseWriter, r *http.Request, redirectURI string, status int, params url.Values) {
	u, err := url.Parse(redirectURI)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "error.bad_redirect")
		return
	}
	q := u.Query()
	for k, v := range params {
		if len(v) == 1 && v[0] != "" {
			q.Set(k, v[0])
		}
	}
	q.Set("iss", s.cfg.Issuer)
	u.RawQuery = q.Encode()
	noStore(w)
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, u.String(), status)
}

func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
