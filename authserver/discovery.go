package authserver

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
)

// ProtectedResourceScopes are the scopes advertised in the protected
// resource metadata: what a member client needs for /mcp and the Account
// API. Operator scopes are in the authorization server metadata; listing
// them here would make clients that request everything advertised ask for
// a mix no single client may hold. offline_access is not among them
// either: a refresh token is nothing a resource needs (the MCP
// authorization specification keeps it out of this document and of
// challenges), so only the authorization server metadata lists it.
var ProtectedResourceScopes = []string{"openid", "profile", "email", "account:read"}

func (s *Server) url(path string) string { return s.cfg.Issuer + path }

// ResourceMetadataURL is where the protected-resource metadata lives.
func (s *Server) ResourceMetadataURL() string { return s.url(sitepath.ProtectedResource) }

func (s *Server) protectedResourceMetadata() map[string]any {
	m := map[string]any{
		"resource":                 s.cfg.Issuer,
		"resource_name":            "Account API and MCP server",
		"authorization_servers":    []string{s.cfg.Issuer},
		"scopes_supported":         ProtectedResourceScopes,
		"bearer_methods_supported": []string{"header"},
		"resource_documentation":   s.url(sitepath.AuthGuide),
	}
	// RFC 9728 §2: what proofs the resources verify, and whether they
	// accept bearer tokens at all.
	if s.dpop.On() {
		m["dpop_signing_alg_values_supported"] = policy.DPoPAlgs
		m["dpop_bound_access_tokens_required"] = s.dpop.Mode() == policy.DPoPRequired
	}
	return m
}

func (s *Server) authorizationServerMetadata(oidc, canSign bool) map[string]any {
	m := map[string]any{
		"issuer":                                         s.cfg.Issuer,
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          GrantTypes(),
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_post"},
		"revocation_endpoint_auth_methods_supported":     []string{"none", "client_secret_post"},
		"introspection_endpoint_auth_methods_supported":  []string{"none", "client_secret_post"},
		"scopes_supported":                               policy.RequestableScopes,
		"client_id_metadata_document_supported":          true,
		"authorization_response_iss_parameter_supported": true,
		"subject_types_supported":                        []string{"public"},
		"claims_supported": []string{"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce",
			"email", "name", "org_id", "roles"},
		"service_documentation": s.url(sitepath.AuthGuide),
	}
	for _, e := range endpoints {
		if e.Metadata != "" {
			m[e.Metadata] = s.url(e.Path)
		}
	}
	// The ID-token fields appear only while a published key may
	// sign, so a client falls back to UserInfo when they are absent.
	if canSign {
		m["id_token_signing_alg_values_supported"] = []string{"ES256"}
	} else {
		delete(m, "jwks_uri")
	}
	if s.dpop.On() {
		// RFC 9449 §5.1.
		m["dpop_signing_alg_values_supported"] = policy.DPoPAlgs
	}
	if oidc {
		m["claims_parameter_supported"] = false
		m["request_parameter_supported"] = false
		m["request_uri_parameter_supported"] = false
	}
	return m
}

// The discovery documents, by what they depend on: the configuration,
// fixed for the server's life, and whether a key may sign now.
const (
	docProtectedResource = iota
	docAuthorizationServer
	docOpenIDConfiguration
	docKinds
)

// metadataDoc returns a discovery document, encoded once per server and
// variant instead of per request.
func (s *Server) metadataDoc(kind int) []byte {
	// Decided once: the variant the document is cached under is the one
	// it is built as, even when a key starts signing in between.
	canSign := s.keys.CanSign(s.cfg.Now())
	i := kind * 2
	if canSign {
		i++
	}
	if body := s.docs[i].Load(); body != nil {
		return *body
	}
	var doc map[string]any
	switch kind {
	case docProtectedResource:
		doc = s.protectedResourceMetadata()
	default:
		doc = s.authorizationServerMetadata(kind == docOpenIDConfiguration, canSign)
	}
	body, err := json.Marshal(doc)
	if err != nil {
		panic(err) // strings, bools and lists of strings always encode
	}
	body = append(body, '\n')
	s.docs[i].Store(&body)
	return body
}

// serveMetadata answers a discovery document, which caches may keep a
// while.
func serveMetadata(w http.ResponseWriter, body []byte) {
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Header().Set("Content-Type", "application/json")
	writeSized(w, body)
}

// writeSized writes a whole body known in advance with its length. Left
// to net/http, a body past its 2 KB response buffer (the OpenID
// configuration is 2.1 KB) goes out chunked, in a write of its own before
// the end: measured through Caddy, 47 µs of CPU a discovery document
// became 64 µs when the document outgrew the buffer.
func writeSized(w http.ResponseWriter, body []byte) {
	w.Header()["Content-Length"] = []string{strconv.Itoa(len(body))}
	_, _ = w.Write(body)
}

func (s *Server) serveJWKS(w http.ResponseWriter, r *http.Request) {
	body, err := s.keys.JWKS(s.cfg.Now())
	if err != nil {
		writeOAuthError(w, errServer("key set unavailable"))
		return
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	writeSized(w, body)
}
