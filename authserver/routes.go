package authserver

import (
	"net/http"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/schoolgate/schoolgate/sitepath"
)

// The authorization server's URL space is one table, routes: each entry
// says where it answers, the name it is counted and refused under, its
// rate limit, whether other origins' scripts may call it, the methods the
// dispatch allows and its handler. ServeHTTP, the metrics, discovery and
// the documents (through Endpoints) all read it, so an endpoint is added,
// renamed or limited in one place.

// Endpoint is one path of the authorization server as the rest of the
// gateway and the documents see it.
type Endpoint struct {
	// Path is where it answers: a sitepath constant.
	Path string
	// Name is how the metrics count its refusals (the endpoint label of
	// oauth_refused_total).
	Name string
	// Title is what the documents call it; empty for what they do not
	// list (the consent step, the pages' areas).
	Title string
	// Metadata is the field of the authorization server metadata that
	// gives its URL, if any.
	Metadata string
}

// route is one entry of the table.
type route struct {
	Endpoint
	// below, when set, makes the route an area: Path and every path that
	// begins with below, with its own routing inside.
	below string
	limit limitClass
	// pages marks routes that answer people's browsers with HTML: their
	// 429 is a page too, never JSON or a redirect.
	pages bool
	// cors lets scripts of any origin read the answers (setCORS). The
	// pages are this origin's alone.
	cors bool
	// getOnly makes the dispatch refuse every method but GET and HEAD;
	// the other routes check methods themselves.
	getOnly bool
	serve   func(*Server, http.ResponseWriter, *http.Request)
}

// limitClass names the limiter a route applies to the caller's address.
type limitClass uint8

const (
	unlimited limitClass = iota
	limitAuthorize
	limitToken
	limitRevoke
	limitRegister
)

// routes is the table. Its order is the documents' order.
var routes = [...]route{
	{Endpoint: Endpoint{Path: sitepath.ProtectedResource, Name: "protected-resource",
		Title: "Protected resource metadata (RFC 9728)"}, cors: true, getOnly: true,
		serve: func(s *Server, w http.ResponseWriter, _ *http.Request) {
			serveMetadata(w, s.metadataDoc(docProtectedResource))
		}},
	{Endpoint: Endpoint{Path: sitepath.ASMetadata, Name: "authorization-server-metadata",
		Title: "Authorization server metadata (RFC 8414)"}, cors: true, getOnly: true,
		serve: func(s *Server, w http.ResponseWriter, _ *http.Request) {
			serveMetadata(w, s.metadataDoc(docAuthorizationServer))
		}},
	{Endpoint: Endpoint{Path: sitepath.OIDCConfig, Name: "openid-configuration",
		Title: "OpenID Connect discovery"}, cors: true, getOnly: true,
		serve: func(s *Server, w http.ResponseWriter, _ *http.Request) {
			serveMetadata(w, s.metadataDoc(docOpenIDConfiguration))
		}},
	{Endpoint: Endpoint{Path: sitepath.JWKS, Name: "jwks", Title: "JSON Web Key Set (ID-token keys)",
		Metadata: "jwks_uri"}, cors: true, getOnly: true, serve: (*Server).serveJWKS},
	{Endpoint: Endpoint{Path: sitepath.Authorize, Name: "authorize", Title: "Authorization",
		Metadata: "authorization_endpoint"}, limit: limitAuthorize, pages: true, serve: (*Server).handleAuthorize},
	// The consent page is the second step of an authorization and is
	// counted with it.
	{Endpoint: Endpoint{Path: sitepath.Consent, Name: "authorize"},
		limit: limitAuthorize, pages: true, serve: (*Server).handleConsent},
	{Endpoint: Endpoint{Path: sitepath.Token, Name: "token", Title: "Token", Metadata: "token_endpoint"},
		limit: limitToken, cors: true, serve: (*Server).handleToken},
	{Endpoint: Endpoint{Path: sitepath.UserInfo, Name: "userinfo", Title: "UserInfo", Metadata: "userinfo_endpoint"},
		cors: true, serve: (*Server).handleUserInfo},
	{Endpoint: Endpoint{Path: sitepath.Revoke, Name: "revoke", Title: "Revocation (RFC 7009)",
		Metadata: "revocation_endpoint"}, limit: limitRevoke, cors: true, serve: (*Server).handleRevoke},
	{Endpoint: Endpoint{Path: sitepath.Introspect, Name: "introspect", Title: "Introspection (RFC 7662)",
		Metadata: "introspection_endpoint"}, limit: limitRevoke, cors: true, serve: (*Server).handleIntrospect},
	{Endpoint: Endpoint{Path: sitepath.Register, Name: "register", Title: "Client registration",
		Metadata: "registration_endpoint"}, limit: limitRegister, cors: true, serve: (*Server).handleRegister},

	// The areas of pages. The admin area has its own security headers
	// and CSRF checks; the person's area has the sign-in pages' limit.
	// Their refusals are counted as "other".
	{Endpoint: Endpoint{Path: sitepath.Admin}, below: sitepath.Admin + "/", serve: (*Server).handleAdmin},
	{Endpoint: Endpoint{Path: sitepath.AccountPages}, below: sitepath.AccountPages + "/",
		limit: limitAuthorize, pages: true, serve: (*Server).handleAccount},
	// What the pages load.
	{Endpoint: Endpoint{Path: sitepath.Assets}, below: sitepath.Assets, getOnly: true,
		serve: func(s *Server, w http.ResponseWriter, r *http.Request) { s.pages.Asset(w, r) }},
}

// notFound answers every other path of the server's namespaces.
var notFound = route{cors: true, serve: func(_ *Server, w http.ResponseWriter, _ *http.Request) { WriteNotFound(w) }}

// byLength holds the routes of exact paths by the length of their path,
// so that finding one compares the path with the one or two endpoints of
// its length and nothing else. areas are the routes left, tried in turn
// when no exact path matched. endpoints are the exact paths' Endpoints
// in the table's order. All are filled by init from routes: the handlers
// in routes refer back to them, which Go's initialization order would
// otherwise reject as a cycle.
var (
	byLength  [][]*route
	areas     []*route
	endpoints []Endpoint
)

func init() {
	for i := range routes {
		rt := &routes[i]
		if rt.below != "" {
			areas = append(areas, rt)
			continue
		}
		for len(byLength) <= len(rt.Path) {
			byLength = append(byLength, nil)
		}
		byLength[len(rt.Path)] = append(byLength[len(rt.Path)], rt)
		endpoints = append(endpoints, rt.Endpoint)
	}
}

// routeFor returns the route of a path, notFound when none has it.
func routeFor(path string) *route {
	if len(path) < len(byLength) {
		for _, rt := range byLength[len(path)] {
			if rt.Path == path {
				return rt
			}
		}
	}
	for _, rt := range areas {
		if strings.HasPrefix(path, rt.below) || path == rt.Path {
			return rt
		}
	}
	return &notFound
}

// metricName is the route's name in the metrics.
func (rt *route) metricName() string {
	if rt.Name == "" {
		return "other"
	}
	return rt.Name
}

// IsPublicDocument reports whether path is one of the documents any
// client may need whatever else is refused: the metadata documents, the
// JWKS (clients validating ID tokens) and what the pages load. They are
// cheap, the same for everyone, and cached; a school's budget does not
// count them.
func IsPublicDocument(path string) bool {
	rt := routeFor(path)
	return rt.getOnly && rt != &notFound
}

// Endpoints are the server's endpoints of one path each (not the pages'
// areas), in the documents' order.
func Endpoints() []Endpoint { return slices.Clone(endpoints) }

// ServeHTTP serves every path sitepath.IsAuthServer reports; unknown ones
// get a JSON 404.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt := routeFor(r.URL.Path)
	if rt.cors {
		setCORS(w, r.Method == http.MethodOptions)
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	// The GET-only routes serve documents and assets: they change nothing
	// and record nothing, so they skip the audit context (an Audit and a
	// request copy each), as preflights do above.
	if !rt.getOnly {
		r = s.withAudit(r)
	}
	if rt.limit != unlimited && s.limited(w, r, s.limits.of(rt.limit), rt.pages) {
		return
	}
	if rt.getOnly && r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeOAuthError(w, &oauthError{Status: http.StatusMethodNotAllowed, Code: "invalid_request", Description: "use GET"})
		return
	}
	if trace.SpanFromContext(r.Context()).SpanContext().IsValid() {
		ctx, span := StartSpan(r.Context(), "oauth "+rt.metricName(), trace.SpanKindInternal)
		defer span.End()
		span.SetAttributes(AttrSchool.String(s.cfg.Issuer))
		r = r.WithContext(ctx)
	}
	rt.serve(s, w, r)
}
