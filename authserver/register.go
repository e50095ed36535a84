package authserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// maxLoopbackClients bounds dynamically registered clients per site, so
// an anonymous endpoint cannot fill the disk.
const maxLoopbackClients = 10000

// registration is the RFC 7591 request; unknown fields are ignored.
type registration struct {
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ApplicationType         string   `json:"application_type"`
	Scope                   string   `json:"scope"`
	// DPoPBound is RFC 9449 §5.2's dpop_bound_access_tokens: the client
	// always sends DPoP proofs, so its token requests without one are
	// refused.
	DPoPBound bool `json:"dpop_bound_access_tokens"`
}

func errMetadata(desc string) *oauthError {
	return &oauthError{Status: http.StatusBadRequest, Code: "invalid_client_metadata", Description: desc}
}
func errRedirect(desc string) *oauthError {
	return &oauthError{Status: http.StatusBadRequest, Code: "invalid_redirect_uri", Description: desc}
}

// handleRegister serves dynamic client registration with the school's
// rules (docs/clients.md), in order: a known vendor name, loopback
// redirects, anything else refused.
func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request) {
	req, e := readRegistration(w, r)
	if e != nil {
		s.refuse(w, r, e)
		return
	}
	c, secret, e := s.register(r.Context(), req, s.clientAddr(r))
	if e != nil {
		s.refuse(w, r, e)
		return
	}
	s.cfg.Observer.Registered(c.Kind)
	writeJSON(w, http.StatusCreated, registrationResponse(c, secret))
}

// parseRegistration decodes and checks the shape of a registration body.
func parseRegistration(body []byte) (*registration, *oauthError) {
	var req registration
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field == "redirect_uris" {
			return nil, errRedirect("redirect_uris must be an array of strings")
		}
		return nil, errMetadata("the body must be a JSON object of client metadata")
	}
	if dec.More() {
		return nil, errMetadata("the body must hold a single JSON object")
	}
	if len(req.RedirectURIs) == 0 {
		return nil, errRedirect("redirect_uris is required")
	}
	if len(req.RedirectURIs) > 20 || len(req.ClientName) > 200 {
		return nil, errMetadata("too many redirect_uris or client_name too long")
	}
	for _, ru := range req.RedirectURIs {
		if e := checkRedirectSyntax(ru); e != nil {
			return nil, e
		}
	}
	return &req, nil
}

func readRegistration(w http.ResponseWriter, r *http.Request) (*registration, *oauthError) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		return nil, &oauthError{Status: http.StatusMethodNotAllowed, Code: "invalid_request", Description: "use POST"}
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, errMetadata("the body must be application/json")
	}
	body, err := readAllLimited(w, r, 64<<10)
	if err != nil {
		return nil, errMetadata("the body is too large or unreadable")
	}
	return parseRegistration(body)
}

func checkRedirectSyntax(raw string) *oauthError {
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "":
		return errRedirect("redirect URI " + raw + " is not an absolute URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errRedirect("redirect URI " + raw + " must use https (or http on loopback)")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return errRedirect("redirect URI " + raw + " must not have a fragment")
	case u.User != nil:
		return errRedirect("redirect URI " + raw + " must not carry user information")
	}
	return nil
}

// register applies the rules and returns the client, with its secret when
// one was just created (it exists only in this answer).
func (s *Server) register(ctx context.Context, req *registration, addr string) (*store.Client, string, *oauthError) {
	if e := checkApplicationType(req); e != nil {
		return nil, "", e
	}
	if v := s.vendorByName(req.ClientName); v != nil {
		for _, ru := range req.RedirectURIs {
			if !slices.Contains(v.RedirectURIs, ru) {
				return nil, "", errRedirect("redirect URI " + ru + " is not registered for " + v.Name)
			}
		}
		// Found, not created: the step went through all the same, and
		// the doctor's register row is what tells an operator the
		// application got this far.
		s.passed(StepRegister, v.ID, "configured integration")
		return v, "", nil
	}
	if allLoopback(req.RedirectURIs) {
		return s.registerLoopback(ctx, req, addr)
	}
	for _, ru := range req.RedirectURIs {
		if strings.HasPrefix(ru, "https://") {
			return nil, "", errRedirect("a fixed https callback needs a registered integration; ask the school operator for a client_id")
		}
	}
	if req.ClientName != "" {
		return nil, "", errMetadata("client_name " + req.ClientName + " is not a known integration")
	}
	return nil, "", errRedirect("http redirect URIs are allowed on loopback addresses only")
}

// Application types of OpenID Connect Dynamic Client Registration §2.
const (
	appNative = "native"
	appWeb    = "web"
)

// checkApplicationType holds the redirect URIs to the application type
// (OpenID Connect Dynamic Client Registration §2): a native application's
// are on the user's machine (loopback; custom schemes are not accepted
// here), a web application's are not. Left out, the type is not checked:
// the OpenID Connect default, web, would refuse every RFC 7591 client with
// a loopback redirect, which is a native application and is registered
// as one.
func checkApplicationType(req *registration) *oauthError {
	switch req.ApplicationType {
	case "":
		return nil
	case appNative, appWeb:
	default:
		return errMetadata("application_type " + req.ApplicationType + " is not supported; use native or web")
	}
	native := req.ApplicationType == appNative
	for _, ru := range req.RedirectURIs {
		u, err := url.Parse(ru)
		switch loopback := err == nil && isLoopbackRedirect(u); {
		case native && !loopback:
			return errRedirect("redirect URI " + ru + " is not a loopback address, which a native application needs (http://127.0.0.1:<port>/...)")
		case !native && loopback:
			return errRedirect("redirect URI " + ru + " is a loopback address, which a web application cannot have; register as native")
		}
	}
	return nil
}

func (s *Server) vendorByName(name string) *store.Client {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil
	}
	for _, v := range s.vendors {
		if strings.EqualFold(v.Name, name) {
			return v
		}
	}
	return nil
}

func allLoopback(uris []string) bool {
	for _, ru := range uris {
		u, err := url.Parse(ru)
		if err != nil || !isLoopbackRedirect(u) {
			return false
		}
	}
	return true
}

// loopbackAuthMethods are the token endpoint authentication methods a
// loopback registration may ask for: a public client, or a confidential
// one with a secret of its own installation (RFC 8252 §8.5).
var loopbackAuthMethods = []string{"none", "client_secret_post"}

// registerLoopback creates an operator-audience client for a CLI, desktop
// app or local agent. An identical public registration returns the client
// it created before; a confidential one always creates a client, because
// its secret is shown only once.
func (s *Server) registerLoopback(ctx context.Context, req *registration, addr string) (*store.Client, string, *oauthError) {
	if e := checkLoopbackMetadata(req); e != nil {
		return nil, "", e
	}
	if e := s.checkDPoPBound(req.DPoPBound); e != nil {
		return nil, "", e
	}
	confidential := req.TokenEndpointAuthMethod == "client_secret_post"
	uris := slices.Clone(req.RedirectURIs)
	sort.Strings(uris)
	identity := req.ClientName + "\x00" + strings.Join(uris, "\x00")
	if req.DPoPBound {
		// A registration asking for bound tokens is another client than
		// the same one without: an identical repeat finds its own.
		identity += "\x00dpop"
	}
	key := hashToken(identity)
	if !confidential {
		// Repeating an identical registration needs no allowance: look for
		// it before the per-address limit counts a new client.
		if c, err := s.loopbackByKey(ctx, key); err != nil {
			return nil, "", s.unavailable("registration", err)
		} else if c != nil {
			s.passed(StepRegister, c.ID, "again, same client")
			return c, "", nil
		}
	}
	if e := s.admitNewClient(addr); e != nil {
		return nil, "", e
	}
	c := &store.Client{ID: "sgc_" + randomString()[:32], Name: req.ClientName, Kind: store.KindLoopback,
		Audience: store.AudienceOperator, RedirectURIs: req.RedirectURIs, Scopes: OperatorScopes(),
		AuthMethod: "none", ApplicationType: appNative, IssuedAt: s.cfg.Now(), DPoPBound: req.DPoPBound}
	var secret string
	if confidential {
		secret = newToken(prefixSecret)
		c.SecretHash, c.AuthMethod = hashSecret(secret), "client_secret_post"
	} else {
		c.RegistrationKey = key
	}
	// The store decides idempotency and the cap in one transaction, so
	// registrations racing on other instances neither duplicate a client
	// nor pass the cap.
	ctx = s.record(ctx, store.AuditEvent{Type: store.EventClientCreated, ClientID: c.ID, Actor: store.ActorClient,
		Detail: c.Kind})
	got, existing, err := s.store.CreateClient(ctx, c, maxLoopbackClients)
	switch {
	case errors.Is(err, store.ErrClientLimit):
		return nil, "", errTooManyClients()
	case err != nil:
		return nil, "", s.unavailable("registration", err)
	case existing:
		s.passed(StepRegister, got.ID, "again, same client")
		return got, "", nil
	}
	s.passed(StepRegister, c.ID, c.Kind)
	return c, secret, nil
}

// loopbackByKey returns the public loopback client registered with key,
// or nil.
func (s *Server) loopbackByKey(ctx context.Context, key string) (*store.Client, error) {
	clients, err := s.store.ListClients(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range clients {
		if c.Kind == store.KindLoopback && c.Public() && c.RegistrationKey == key {
			return c, nil
		}
	}
	return nil, nil
}

// checkLoopbackMetadata refuses what a loopback client cannot have.
func checkLoopbackMetadata(req *registration) *oauthError {
	if m := req.TokenEndpointAuthMethod; m != "" && !slices.Contains(loopbackAuthMethods, m) {
		return errMetadata("token_endpoint_auth_method " + m + " is not supported; use " +
			strings.Join(loopbackAuthMethods, " or "))
	}
	for _, g := range req.GrantTypes {
		if grantTypeOf(g) == nil {
			return errMetadata("grant type " + g + " is not supported")
		}
	}
	for _, rt := range req.ResponseTypes {
		if rt != "code" {
			return errMetadata("response type " + rt + " is not supported")
		}
	}
	return nil
}

// checkDPoPBound refuses a client that always sends DPoP proofs at a
// school with DPoP off, which would give it bearer tokens all the same.
func (s *Server) checkDPoPBound(bound bool) *oauthError {
	if bound && !s.dpop.On() {
		return errMetadata("dpop_bound_access_tokens: this school does not issue DPoP-bound tokens")
	}
	return nil
}

// admitNewClient applies the per-address bound on new registrations,
// public and confidential alike; the per-site cap is the store's.
func (s *Server) admitNewClient(addr string) *oauthError {
	if ok, wait := s.limits.newClients.allow(addr, s.cfg.Now()); !ok {
		secs := max(1, int(wait.Round(time.Second)/time.Second))
		return &oauthError{Status: http.StatusTooManyRequests, Code: "temporarily_unavailable",
			Description: fmt.Sprintf("too many new clients from this address; retry after %d s", secs), RetryAfter: secs}
	}
	return nil
}

func errTooManyClients() *oauthError {
	return &oauthError{Status: http.StatusBadRequest, Code: "invalid_client_metadata", Description: "this school has too many registered clients"}
}

// registrationResponse is the RFC 7591 §3.2.1 answer; secret is set only
// for a confidential client created by this request.
func registrationResponse(c *store.Client, secret string) map[string]any {
	m := map[string]any{
		"client_id":                  c.ID,
		"client_name":                c.Name,
		"redirect_uris":              c.RedirectURIs,
		"token_endpoint_auth_method": c.AuthMethod,
		"grant_types":                GrantTypes(),
		"response_types":             []string{"code"},
		"scope":                      strings.Join(requestableScopes(c), " "),
	}
	if !c.IssuedAt.IsZero() {
		m["client_id_issued_at"] = c.IssuedAt.Unix()
	} else {
		m["client_id_issued_at"] = 0
	}
	if c.DPoPBound {
		m["dpop_bound_access_tokens"] = true
	}
	if c.Kind == store.KindLoopback {
		// Registered before the type was recorded, it is native all the same.
		m["application_type"] = appNative
	}
	if secret != "" {
		m["client_secret"] = secret
		m["client_secret_expires_at"] = 0 // the secret does not expire
	}
	return m
}
