// Package sitedocs renders a school's machine-readable documents from its
// real configuration and catalog: /openapi.json (OpenAPI 3.0.3 for the origin),
// /auth.md (the authentication walkthrough with this site's URLs),
// /llms.txt (the llmstxt.org content index) and /pricing.md (what the site
// sells). The Markdown documents are text/template files under templates/.
// Build renders all four once; Set serves the stored bytes with strong
// ETags, so a request never renders anything.
package sitedocs

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
)

// Content types. llms.txt is Markdown by the llmstxt.org convention, but it
// is served as text/plain: the .txt name promises plain text, browsers show
// text/plain inline instead of offering a download, and agent fetchers that
// accept only text/* types for a .txt file all accept text/plain. The .md
// documents use the registered text/markdown (RFC 7763).
const (
	typeJSON     = "application/json"
	typeMarkdown = "text/markdown; charset=utf-8"
	typeText     = "text/plain; charset=utf-8"
)

// Site is the configuration the documents describe.
type Site struct {
	// Issuer is the site's origin: issuer, resource and server URL.
	Issuer string
	// SchoolName titles the documents.
	SchoolName string
	// AdminPrefix is where the operator admin API lives ("" for none).
	AdminPrefix string
	// Scopes are every scope a client may request, in
	// policy.RequestableScopes' order.
	Scopes []string
	// ProtectedResourceScopes are what a member client requests.
	ProtectedResourceScopes []string
	// Endpoints are the authorization server's, in its route table's
	// order; the documents list those with a title.
	Endpoints []Endpoint
	// GrantTypes are the grants the token endpoint accepts.
	GrantTypes []string
	// MCPConnections reports whether the beta feature "MCP connections" is
	// on, i.e. operators can create member applications.
	MCPConnections bool
	// DPoP is what the school makes of DPoP (RFC 9449): its option's
	// value, off, allowed or required ("" is allowed).
	DPoP string
	// DPoPNonce reports whether DPoP proofs must carry the school's
	// nonce.
	DPoPNonce bool
	// AdminOpenAPI is the school's own OpenAPI 3.0 (JSON) description of
	// its admin API, merged into /openapi.json when set.
	AdminOpenAPI []byte
	// AdminScopes is the gateway's policy for admin requests, used for
	// the operations of AdminOpenAPI; nil means the default policy.
	AdminScopes AdminScopes

	// CatalogUnread is a site whose catalog feed is configured but could
	// not be read yet (its first import failed and nothing is stored),
	// so that the documents lack what it sells and its name. They say so,
	// and every one of them is served with Cache-Control: no-store, so
	// that no cache keeps them once the catalog is in. Ignored when a feed
	// is given to Build.
	CatalogUnread bool
	// AdminOpenAPIUnread is a site whose admin OpenAPI document comes
	// from a URL that could not be read yet: /openapi.json lacks the
	// school's own operations and is served with no-store.
	AdminOpenAPIUnread bool
}

// DPoPOn reports whether the school takes DPoP proofs.
func (s Site) DPoPOn() bool { return s.DPoP != policy.DPoPOff.String() }

// DPoPRequired reports whether it takes DPoP-bound tokens only.
func (s Site) DPoPRequired() bool { return s.DPoP == policy.DPoPRequired.String() }

// DPoPAlgs are the algorithms its proofs may use, as the metadata lists
// them.
func (Site) DPoPAlgs() string { return "`" + strings.Join(policy.DPoPAlgs, "`, `") + "`" }

// DPoPAlgList is the algorithms as a challenge's algs lists them.
func (Site) DPoPAlgList() string { return strings.Join(policy.DPoPAlgs, " ") }

// Endpoint is one endpoint of the authorization server, as the documents
// name it: Title is empty for one they do not list (the consent step).
type Endpoint struct {
	Path, Title string
}

// Cache-Control of a document: one rendered from everything the site has
// is public for five minutes; one that lacks an input the site has but
// could not read yet is kept by no cache (Site.CatalogUnread).
const (
	cachePublic  = "public, max-age=300"
	cacheNoStore = "no-store"
)

// Build renders the four documents for a site. feed may be nil when no
// catalog has been imported yet. now decides which events are still ahead
// (past events are not offered for sale).
func Build(s Site, feed *catalog.Feed, now time.Time) (*Set, error) {
	site, err := normalizeSite(s)
	if err != nil {
		return nil, err
	}
	site.CatalogUnread = site.CatalogUnread && feed == nil
	docCache := cachePublic
	if site.CatalogUnread {
		docCache = cacheNoStore
	}
	apiCache := docCache
	if site.AdminOpenAPIUnread {
		apiCache = cacheNoStore
	}
	documents := []struct {
		path, contentType, cache string
		render                   func() ([]byte, error)
	}{
		{sitepath.OpenAPI, typeJSON, apiCache, func() ([]byte, error) { return renderOpenAPI(site) }},
		{sitepath.AuthGuide, typeMarkdown, docCache, func() ([]byte, error) { return renderAuth(site) }},
		{sitepath.LLMs, typeText, docCache, func() ([]byte, error) { return renderLLMs(site, feed, now) }},
		{sitepath.Pricing, typeMarkdown, docCache, func() ([]byte, error) { return renderPricing(site, feed, now) }},
	}
	// The school's own admin OpenAPI document is the one input that can
	// fail a render: it is checked now, so that a bad one fails the load.
	if len(site.AdminOpenAPI) > 0 && site.AdminPrefix != "" {
		if _, err := parseAdminOpenAPI(site.AdminOpenAPI, site); err != nil {
			return nil, fmt.Errorf("%s: %w", sitepath.OpenAPI, err)
		}
	}
	set := &Set{docs: make(map[string]*lazyDoc, len(documents)),
		catalogUnread: site.CatalogUnread, adminUnread: site.AdminOpenAPIUnread}
	for _, d := range documents {
		set.docs[d.path] = &lazyDoc{render: d.render, contentType: d.contentType, cache: d.cache}
	}
	return set, nil
}

// normalizeSite checks the configuration and puts it in the one form the
// renderers use: an issuer without a trailing slash, an admin prefix with a
// leading and no trailing slash, a school name.
func normalizeSite(s Site) (Site, error) {
	issuer, err := policy.ParseOrigin(s.Issuer)
	if err != nil {
		return Site{}, fmt.Errorf("issuer: %v", err)
	}
	s.Issuer = issuer
	if len(s.Scopes) == 0 {
		return Site{}, errors.New("no scopes configured")
	}
	if len(s.ProtectedResourceScopes) == 0 {
		return Site{}, errors.New("no protected-resource scopes configured")
	}
	if len(listedEndpoints(s.Endpoints)) == 0 || len(s.GrantTypes) == 0 {
		return Site{}, errors.New("the authorization server's endpoints and grant types are required")
	}
	p := strings.Trim(strings.TrimSpace(s.AdminPrefix), "/")
	if p != "" {
		p = "/" + p
	}
	if strings.ContainsAny(p, "{}?#`|<>\"\\ \t\r\n") {
		return Site{}, fmt.Errorf("admin prefix %q is not a plain path", s.AdminPrefix)
	}
	s.AdminPrefix = p
	s.SchoolName = cleanText(s.SchoolName)
	mode, err := policy.ParseDPoPMode(s.DPoP)
	if err != nil {
		return Site{}, fmt.Errorf("dpop: %v", err)
	}
	s.DPoP = mode.String()
	if s.SchoolName == "" {
		s.SchoolName = s.Issuer
	}
	return s, nil
}
