package authserver

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

// IdentityScopes are the OpenID Connect scopes every audience may request.
var IdentityScopes = []string{"openid", "profile", "email"}

// OperatorScopes are every scope of the table but the member-only ones.
func OperatorScopes() []string {
	var out []string
	for _, s := range policy.AllScopes {
		if !slices.Contains(policy.MemberOnlyScopes, s) {
			out = append(out, s)
		}
	}
	return out
}

// DefaultMemberScopes is what a member client may request unless the
// operator chose otherwise.
var DefaultMemberScopes = []string{"openid", "profile", "email", "account:read", "account:write"}

func defaultScopes(audience string) []string {
	if audience == store.AudienceOperator {
		return OperatorScopes()
	}
	return DefaultMemberScopes
}

// vendorClients turns configured vendors into clients.
func vendorClients(vendors []VendorClient) map[string]*store.Client {
	out := make(map[string]*store.Client, len(vendors))
	for _, v := range vendors {
		aud := v.Audience
		if aud == "" {
			aud = store.AudienceMember
		}
		scopes := v.Scopes
		if len(scopes) == 0 {
			scopes = defaultScopes(aud)
		}
		c := &store.Client{ID: v.ClientID, Name: v.Name, Kind: store.KindVendor, Audience: aud,
			RedirectURIs: v.RedirectURIs, Scopes: scopes, AuthMethod: "none"}
		if v.Secret != "" {
			c.SecretHash = hashSecret(v.Secret)
			c.AuthMethod = "client_secret_post"
		}
		out[v.ClientID] = c
	}
	return out
}

// errUnknownClient means no client has the id.
var errUnknownClient = errors.New("unknown client")

// client finds a client by id: configured vendors first, then the store.
func (s *Server) client(ctx context.Context, id string) (*store.Client, error) {
	if id == "" {
		return nil, errUnknownClient
	}
	if isMetadataClientID(id) {
		return s.metadataClient(ctx, id)
	}
	if c, ok := s.vendors[id]; ok {
		return c, nil
	}
	c, err := s.store.GetClient(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errUnknownClient
	}
	if err != nil {
		return nil, err
	}
	if c.Kind == store.KindApp {
		// Member applications exist only while the beta feature is on.
		switch on, err := s.MCPConnectionsEnabled(ctx); {
		case err != nil:
			return nil, err
		case !on:
			return nil, errUnknownClient
		}
	}
	return c, nil
}

// isLoopbackRedirect reports whether u is an http loopback redirect URI,
// the way RFC 8252 §7.3 native-app redirects name the local machine.
func isLoopbackRedirect(u *url.URL) bool {
	return u.Scheme == "http" && policy.IsLoopbackHost(u.Hostname())
}

// MatchRedirect reports whether uri is registered for the client: exact
// string match, except that a loopback registration matches any port.
func MatchRedirect(c *store.Client, uri string) bool {
	if slices.Contains(c.RedirectURIs, uri) {
		return true
	}
	got, err := url.Parse(uri)
	if err != nil || !isLoopbackRedirect(got) || got.User != nil || strings.Contains(uri, "#") ||
		!validPort(got.Port()) {
		return false
	}
	for _, reg := range c.RedirectURIs {
		want, err := url.Parse(reg)
		if err != nil || !isLoopbackRedirect(want) {
			continue
		}
		// Only the port may differ: host, path and query (including an
		// empty "?") must be the registered ones.
		if got.Hostname() == want.Hostname() && got.EscapedPath() == want.EscapedPath() &&
			got.RawQuery == want.RawQuery && got.ForceQuery == want.ForceQuery {
			return true
		}
	}
	return false
}

// validPort accepts no port, or a port number 1–65535 without a sign or
// leading zeros.
func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == p
}

// checkScopes validates requested scopes against the client.
// offline_access passes whatever the client was given: it asks for the
// refresh token every client gets anyway, and stock OpenID Connect and
// MCP clients add it on their own, so a client configured with a list
// that lacks it must not be refused for it. Alone it would grant nothing.
func checkScopes(c *store.Client, scopes []string) *oauthError {
	data := false
	for _, sc := range scopes {
		if sc == policy.OfflineAccess {
			continue
		}
		data = true
		if !slices.Contains(policy.AllScopes, sc) {
			return errInvalidScope("unknown scope "+sc).because(ReasonScopeUnknown, sc)
		}
		if c.Audience == store.AudienceOperator && slices.Contains(policy.MemberOnlyScopes, sc) {
			return errInvalidScope(sc+" is reserved to member clients"+memberHint(c)).because(ReasonScopeMemberOnly, sc)
		}
		if !slices.Contains(allowedScopes(c), sc) {
			return errInvalidScope("scope "+sc+" is not allowed for this client").because(ReasonScopeNotAllowed, sc)
		}
	}
	if !data {
		return errInvalidScope("offline_access alone grants nothing; request it with the scopes the client needs").
			because(ReasonOfflineOnly, "")
	}
	return nil
}

// requestableScopes are what the client may put in a scope parameter:
// the scopes it was given, and offline_access, which every client may
// add.
func requestableScopes(c *store.Client) []string {
	if slices.Contains(c.Scopes, policy.OfflineAccess) {
		return c.Scopes
	}
	return append(slices.Clone(c.Scopes), policy.OfflineAccess)
}

// memberHint tells a self-registered client, which stock MCP and OAuth
// libraries become when they register with a loopback redirect, how it
// could act for a member instead: it cannot register as one.
func memberHint(c *store.Client) string {
	if c.Kind != store.KindLoopback {
		return ""
	}
	return "; a client registered with a loopback redirect acts for the school's staff. " +
		"To act for a member, use the client_id of a member application the school creates " +
		"in its OAuth applications, or an https client_id naming a Client ID Metadata Document"
}

// allowedScopes limits unreviewed metadata-document clients to read and
// identity scopes: anyone can publish a document, so nothing it names may
// write until an operator has reviewed the client.
func allowedScopes(c *store.Client) []string {
	if c.Kind != store.KindMetadata || c.Reviewed {
		return c.Scopes
	}
	var out []string
	for _, s := range c.Scopes {
		if slices.Contains(IdentityScopes, s) || strings.HasSuffix(s, ":read") {
			out = append(out, s)
		}
	}
	return out
}
