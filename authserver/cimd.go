package authserver

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/schoolgate/schoolgate/store"
)

// MetadataDocumentsConfig configures Client ID Metadata Documents: a
// client_id that is an https URL names a JSON document describing the
// client, which the server fetches.
type MetadataDocumentsConfig struct {
	// AllowHosts lists the hosts documents may come from; empty or "*"
	// means any public host, "*.example.com" any subdomain.
	AllowHosts []string `json:"allow_hosts,omitempty"`
	// AllowPrivateNetworks permits fetching from loopback and private
	// addresses. For tests only.
	AllowPrivateNetworks bool `json:"allow_private_networks,omitempty"`
	// RootCAs overrides the system roots (tests); nil = system roots,
	// which honour SSL_CERT_FILE.
	RootCAs *x509.CertPool `json:"-"`
}

// Limits of metadata-document fetching.
const (
	maxMetadataDocBytes = 16 << 10
	metadataCacheTTL    = 5 * time.Minute
	maxMetadataClients  = 10000
)

// metadataError is why a metadata document cannot be used; it becomes
// invalid_client_metadata. reason is the connection doctor's.
type metadataError struct{ msg, reason string }

func (e *metadataError) Error() string { return e.msg }

func metaErr(reason, format string, args ...any) error {
	return &metadataError{msg: fmt.Sprintf(format, args...), reason: reason}
}

// isMetadataClientID tells a metadata-document client_id from a
// registered one: registered ids never contain "://", so any URL is
// treated as a document (and an http one refused with a clear reason).
func isMetadataClientID(id string) bool { return strings.Contains(id, "://") }

type metadataDoc struct {
	name         string
	redirectURIs []string
	// dpopBound is the document's dpop_bound_access_tokens (RFC 9449 §5.2).
	dpopBound bool
}

type metadataEntry struct {
	doc     *metadataDoc
	expires time.Time
}

// metadataResolver fetches, validates and caches documents.
type metadataResolver struct {
	cfg    MetadataDocumentsConfig
	client *http.Client
	cache  *lru.Cache[string, metadataEntry]
	now    func() time.Time
}

func newMetadataResolver(cfg MetadataDocumentsConfig, now func() time.Time) *metadataResolver {
	cache, _ := lru.New[string, metadataEntry](1024)
	return &metadataResolver{cfg: cfg, client: fetchClient(cfg.AllowPrivateNetworks, cfg.RootCAs),
		cache: cache, now: now}
}

// metadataClient resolves a metadata-document client: the document gives
// name and redirect URIs, the store keeps what the operator decided
// (reviewed, scopes) and lets the admin area list the clients seen.
func (s *Server) metadataClient(ctx context.Context, id string) (*store.Client, error) {
	doc, fetched, err := s.metadata.resolve(ctx, id)
	if err != nil {
		s.logOnly(ctx, store.AuditEvent{Type: eventMetadataRefused, ClientID: clip(id), Actor: store.ActorClient,
			Outcome: clip(err.Error())})
		if me := (*metadataError)(nil); errors.As(err, &me) {
			s.noteStep(StepMetadata, clip(id), "", me.reason, "invalid_client_metadata", me.msg)
		}
		return nil, err
	}
	if e := s.checkDPoPBound(doc.dpopBound); e != nil {
		s.noteStep(StepMetadata, clip(id), "", ReasonMetadataContent, "invalid_client_metadata", e.Description)
		return nil, metaErr(ReasonMetadataContent, "%s", e.Description)
	}
	if fetched {
		s.passed(StepMetadata, clip(id), doc.name)
	}
	stored, err := s.store.GetClient(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		c := &store.Client{ID: id, Name: doc.name, Kind: store.KindMetadata, Audience: store.AudienceMember,
			RedirectURIs: doc.redirectURIs, Scopes: DefaultMemberScopes, AuthMethod: "none",
			IssuedAt: s.cfg.Now().UTC(), DPoPBound: doc.dpopBound}
		ctx := s.record(ctx, store.AuditEvent{Type: store.EventClientCreated, ClientID: c.ID, Actor: store.ActorClient,
			Detail: c.Kind})
		got, existing, err := s.store.CreateClient(ctx, c, maxMetadataClients)
		switch {
		case errors.Is(err, store.ErrClientLimit):
			// Fetched and accepted, the document is refused for the
			// school's bound: the doctor says which.
			const msg = "this school has reached its limit of metadata-document clients"
			s.noteStep(StepMetadata, clip(id), "", ReasonMetadataLimit, "invalid_client_metadata", msg)
			return nil, metaErr(ReasonMetadataLimit, msg)
		case err != nil:
			return nil, err
		case !existing:
			return got, nil
		case got.Kind != store.KindMetadata:
			return nil, errUnknownClient
		}
		// Another request created it meanwhile: go on with that one.
		stored = got
	case err != nil:
		return nil, err
	case stored.Kind != store.KindMetadata:
		return nil, errUnknownClient
	}
	if stored.Name != doc.name || !slices.Equal(stored.RedirectURIs, doc.redirectURIs) || stored.DPoPBound != doc.dpopBound {
		// Only a changed document costs a write.
		stored.Name, stored.RedirectURIs, stored.DPoPBound = doc.name, doc.redirectURIs, doc.dpopBound
		if err := s.store.PutClient(ctx, stored); err != nil {
			return nil, err
		}
	}
	return stored, nil
}

// resolve returns the document of a client_id, and whether it was
// fetched now rather than read from the cache.
func (m *metadataResolver) resolve(ctx context.Context, id string) (*metadataDoc, bool, error) {
	now := m.now()
	if e, ok := m.cache.Get(id); ok && now.Before(e.expires) {
		return e.doc, false, nil
	}
	u, err := m.checkURL(id)
	if err != nil {
		return nil, false, err
	}
	// Failures are never cached: a client developer who fixes a document
	// sees the fix on the next attempt, and a transient outage does not
	// outlive itself.
	doc, ttl, err := m.fetch(ctx, u)
	if err != nil {
		return nil, false, err
	}
	m.cache.Add(id, metadataEntry{doc: doc, expires: now.Add(ttl)})
	return doc, true, nil
}

// checkURL applies the rules for a client_id URL: https, a path, no
// dot segments, fragment or credentials, and an allowed host.
func (m *metadataResolver) checkURL(id string) (*url.URL, error) {
	u, err := url.Parse(id)
	switch {
	case err != nil || len(id) > 2048:
		return nil, metaErr(ReasonMetadataURL, "the client_id is not a valid URL")
	case u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return nil, metaErr(ReasonMetadataURL, "a metadata-document client_id must be an https URL")
	case u.User != nil || u.Fragment != "" || strings.Contains(id, "#"):
		return nil, metaErr(ReasonMetadataURL, "a metadata-document client_id must not carry credentials or a fragment")
	case u.Path == "" || u.Path == "/":
		return nil, metaErr(ReasonMetadataURL, "a metadata-document client_id must have a path")
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if seg == "." || seg == ".." || strings.EqualFold(seg, "%2e") || strings.EqualFold(seg, "%2e%2e") {
			return nil, metaErr(ReasonMetadataURL, "a metadata-document client_id must not contain dot segments")
		}
	}
	if !m.hostAllowed(u.Hostname()) {
		return nil, metaErr(ReasonMetadataHost, "this school does not accept metadata documents from %s", u.Hostname())
	}
	return u, nil
}

func (m *metadataResolver) hostAllowed(host string) bool {
	if len(m.cfg.AllowHosts) == 0 {
		return true
	}
	host = strings.ToLower(host)
	for _, h := range m.cfg.AllowHosts {
		h = strings.ToLower(h)
		switch {
		case h == "*", h == host:
			return true
		case strings.HasPrefix(h, "*.") && strings.HasSuffix(host, h[1:]):
			return true
		}
	}
	return false
}

func (m *metadataResolver) fetch(ctx context.Context, u *url.URL) (*metadataDoc, time.Duration, error) {
	body, header, err := m.download(ctx, u)
	if err != nil {
		return nil, 0, err
	}
	doc, err := parseMetadataDoc(body, u)
	if err != nil {
		return nil, 0, err
	}
	return doc, documentTTL(header.Get("Cache-Control")), nil
}

// download reads the document's bytes from the client's host. The
// request's slot of the instance (store.Waiter) is given back meanwhile:
// the host may take the fetch's whole timeout to answer, and a slot held
// that long is a processor's share kept from every school, so that a few
// requests naming a slow host would hold the instance.
func (m *metadataResolver) download(ctx context.Context, u *url.URL) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, metaErr(ReasonMetadataURL, "the client_id is not a valid URL")
	}
	req.Header.Set("Accept", "application/json")
	if w := store.WaiterOf(ctx); w != nil {
		w.Pause()
		defer w.Resume() // after the body is closed: nothing held then
	}
	resp, err := m.client.Do(req)
	if err != nil {
		if errors.Is(err, errBlockedAddress) {
			return nil, nil, metaErr(ReasonMetadataFetch, "the metadata document's host resolves to an address this school does not fetch from")
		}
		return nil, nil, metaErr(ReasonMetadataFetch, "the metadata document could not be fetched: %s", fetchFailure(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, metaErr(ReasonMetadataStatus, "fetching the metadata document answered HTTP %d", resp.StatusCode)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return nil, nil, metaErr(ReasonMetadataContent, "the metadata document must be served as application/json")
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataDocBytes+1))
	if err != nil {
		return nil, nil, metaErr(ReasonMetadataFetch, "the metadata document could not be read")
	}
	if len(body) > maxMetadataDocBytes {
		return nil, nil, metaErr(ReasonMetadataSize, "the metadata document is larger than %d bytes", maxMetadataDocBytes)
	}
	return body, resp.Header, nil
}

// fetchFailure names a network failure without echoing internals.
func fetchFailure(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Timeout() {
		return "timed out"
	}
	if strings.Contains(err.Error(), "redirects are not followed") {
		return "it redirects, and redirects are not followed"
	}
	if strings.Contains(err.Error(), "certificate") {
		return "TLS certificate not trusted"
	}
	return "connection failed"
}

// documentTTL honours a max-age within sane bounds.
func documentTTL(cc string) time.Duration {
	for _, d := range strings.Split(cc, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(d), "=")
		if !strings.EqualFold(k, "max-age") {
			continue
		}
		var secs int
		if _, err := fmt.Sscanf(v, "%d", &secs); err == nil {
			return min(max(time.Duration(secs)*time.Second, time.Minute), time.Hour)
		}
	}
	return metadataCacheTTL
}

// parseMetadataDoc validates a document against the URL it came from.
// grant_types and response_types are not read: such a client only ever
// gets the authorization code flow (with refresh), so a document listing
// other grants as well is usable and the others are simply not offered.
func parseMetadataDoc(body []byte, from *url.URL) (*metadataDoc, error) {
	var raw struct {
		ClientID     string          `json:"client_id"`
		ClientName   string          `json:"client_name"`
		RedirectURIs json.RawMessage `json:"redirect_uris"`
		AuthMethod   string          `json:"token_endpoint_auth_method"`
		ClientSecret *string         `json:"client_secret"`
		DPoPBound    bool            `json:"dpop_bound_access_tokens"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if err := dec.Decode(&raw); err != nil {
		return nil, metaErr(ReasonMetadataContent, "the metadata document is not a valid JSON object")
	}
	if dec.More() {
		return nil, metaErr(ReasonMetadataContent, "the metadata document has data after its JSON object")
	}
	if raw.ClientID != from.String() {
		return nil, metaErr(ReasonMetadataContent, "the metadata document's client_id must equal its URL %s", from)
	}
	if raw.ClientSecret != nil {
		return nil, metaErr(ReasonMetadataContent, "a metadata document must not contain a client_secret")
	}
	if raw.AuthMethod != "" && raw.AuthMethod != "none" {
		return nil, metaErr(ReasonMetadataContent, "metadata-document clients are public: token_endpoint_auth_method must be none")
	}
	var uris []string
	if err := json.Unmarshal(raw.RedirectURIs, &uris); err != nil || len(uris) == 0 || len(uris) > 20 {
		return nil, metaErr(ReasonMetadataContent, "redirect_uris must be an array of 1 to 20 URIs")
	}
	for _, ru := range uris {
		if err := checkMetadataRedirect(ru, from.Hostname()); err != nil {
			return nil, err
		}
	}
	name := strings.TrimSpace(raw.ClientName)
	if name == "" {
		name = from.Hostname()
	}
	if len(name) > 200 {
		name = name[:200]
	}
	return &metadataDoc{name: name, redirectURIs: uris, dpopBound: raw.DPoPBound}, nil
}

// checkMetadataRedirect: a metadata document may only name redirect URIs
// under its own host, or loopback ones, so that a document cannot send
// codes to a host its publisher does not control.
func checkMetadataRedirect(raw, docHost string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Fragment != "" || strings.Contains(raw, "#") || u.User != nil || u.Host == "" {
		return metaErr(ReasonMetadataContent, "redirect URI %q is not an absolute URI without fragment", raw)
	}
	switch {
	case isLoopbackRedirect(u):
		return nil
	case u.Scheme == "https" && strings.EqualFold(u.Hostname(), docHost):
		return nil
	}
	return metaErr(ReasonMetadataContent, "redirect URI %q must be on %s or a loopback address", raw, docHost)
}
