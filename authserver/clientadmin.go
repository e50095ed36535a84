package authserver

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/schoolgate/schoolgate/i18n"
	"github.com/schoolgate/schoolgate/store"
)

// The operations of the admin area as plain methods, shared by the HTML
// pages and by automation (Caddy's admin API, see caddymodule/adminapi.go).
// The caller is trusted: whoever reaches these is the site's operator.

// ClientInfo is what an operator, or a person asked for consent, sees of
// a client; never a secret or a hash.
type ClientInfo struct {
	ClientID      string    `json:"client_id"`
	Name          string    `json:"client_name"`
	Kind          string    `json:"kind"`
	Audience      string    `json:"audience"`
	RedirectURIs  []string  `json:"redirect_uris"`
	Scopes        []string  `json:"scopes"`
	AllowedScopes []string  `json:"allowed_scopes"`
	AuthMethod    string    `json:"token_endpoint_auth_method"`
	Reviewed      bool      `json:"reviewed"`
	IssuedAt      time.Time `json:"issued_at"`
	// DPoPBound: the client gets DPoP-bound tokens only (RFC 9449 §5.2).
	DPoPBound bool `json:"dpop_bound_access_tokens"`
}

// Confidential reports whether the client authenticates with a secret.
func (c ClientInfo) Confidential() bool { return c.AuthMethod != "none" }

func clientInfo(c *store.Client) ClientInfo {
	return ClientInfo{ClientID: c.ID, Name: displayName(c), Kind: c.Kind, Audience: c.Audience,
		RedirectURIs: c.RedirectURIs, Scopes: c.Scopes, AllowedScopes: allowedScopes(c),
		AuthMethod: c.AuthMethod, Reviewed: c.Reviewed, IssuedAt: c.IssuedAt, DPoPBound: c.DPoPBound}
}

// AppSpec describes a member application.
type AppSpec struct {
	Name         string   `json:"client_name"`
	RedirectURIs []string `json:"redirect_uris"`
	Scopes       []string `json:"scopes"`
	Confidential bool     `json:"confidential"`
	// DPoPBound makes the token endpoint issue the application
	// DPoP-bound tokens only, whatever the school allows (RFC 9449 §5.2's
	// dpop_bound_access_tokens); a school with dpop off issues it none.
	DPoPBound bool `json:"dpop_bound_access_tokens,omitempty"`
}

// InputError is an operator input the server refuses; its message says
// what to change. Msg is in English (the admin API's answer); Key, when
// set, names the message in the catalog and Args fill its placeholders,
// so that the admin area can say it in the operator's language.
type InputError struct {
	Msg  string
	Key  string
	Args []any
}

func (e *InputError) Error() string { return e.Msg }

// NewInputError is the InputError saying the message key (with its
// placeholders' name-value pairs).
func NewInputError(key string, args ...any) *InputError {
	return &InputError{Msg: i18n.Msg(i18n.Languages[0], key, args...), Key: key, Args: args}
}

// In is the message in lang.
func (e *InputError) In(lang string) string {
	if e.Key == "" {
		return e.Msg
	}
	return i18n.Msg(lang, e.Key, e.Args...)
}

// ErrWrongKind is returned when an operation does not apply to the kind
// of client named (deleting a vendor, reviewing a member application).
var ErrWrongKind = errors.New("the operation does not apply to this kind of client")

// Normalize validates the spec in place: trimmed name, unique redirect
// URIs, scopes in the table's order. The error is for the operator.
func (spec *AppSpec) Normalize() *InputError {
	spec.Name = strings.TrimSpace(spec.Name)
	switch {
	case spec.Name == "":
		return NewInputError("admin.invalid.name_empty")
	case !utf8.ValidString(spec.Name) || strings.IndexFunc(spec.Name, unicode.IsControl) >= 0:
		return NewInputError("admin.invalid.name_control")
	case utf8.RuneCountInString(spec.Name) > maxAppNameLen:
		return NewInputError("admin.invalid.name_long", "n", maxAppNameLen)
	}
	var uris []string
	for _, raw := range spec.RedirectURIs {
		raw = strings.TrimSpace(raw)
		if raw == "" || slices.Contains(uris, raw) {
			continue
		}
		if ie := checkAppRedirect(raw); ie != nil {
			return ie
		}
		if uris = append(uris, raw); len(uris) > maxAppRedirectURIs {
			return NewInputError("admin.invalid.redirects_many", "n", maxAppRedirectURIs)
		}
	}
	if len(uris) == 0 {
		return NewInputError("admin.invalid.redirects_none")
	}
	spec.RedirectURIs = uris
	scopes, ie := parseMemberScopes(spec.Scopes)
	spec.Scopes = scopes
	return ie
}

// ListClients returns the stored clients, newest first. Vendor clients
// configured in the Caddyfile are included once they have been seen.
func (s Reads) ListClients(ctx context.Context) ([]ClientInfo, error) {
	clients, err := s.store.ListClients(ctx)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(clients, func(i, j int) bool {
		if !clients[i].IssuedAt.Equal(clients[j].IssuedAt) {
			return clients[i].IssuedAt.After(clients[j].IssuedAt)
		}
		return clients[i].ID < clients[j].ID
	})
	out := make([]ClientInfo, 0, len(clients))
	for _, c := range clients {
		out = append(out, clientInfo(c))
	}
	return out, nil
}

// CreatedApp is a new member application with its secret (empty for a
// public one), which exists only in this answer.
type CreatedApp struct {
	ClientInfo
	ClientSecret string `json:"client_secret,omitempty"`
	// Existing is set when the key named an application created before;
	// its secret is not shown again.
	Existing bool `json:"-"`
}

// CreateApp creates a member application. A non-empty key makes the
// creation idempotent: another call with the same key returns the first
// application, marked Existing.
func (s *Server) CreateApp(ctx context.Context, spec AppSpec, key string) (*CreatedApp, error) {
	if ie := spec.Normalize(); ie != nil {
		return nil, ie
	}
	if key != "" {
		key = hashToken("admin-app\x00" + key)
	}
	c := &store.Client{ID: "app_" + randomString()[:22], Name: spec.Name, Kind: store.KindApp,
		Audience: store.AudienceMember, RedirectURIs: spec.RedirectURIs, Scopes: spec.Scopes,
		AuthMethod: "none", IssuedAt: s.cfg.Now().UTC(), RegistrationKey: key, DPoPBound: spec.DPoPBound}
	var secret string
	if spec.Confidential {
		secret = newToken(prefixSecret)
		c.SecretHash, c.AuthMethod = hashSecret(secret), "client_secret_post"
	}
	detail := "public"
	if spec.Confidential {
		detail = "confidential"
	}
	ctx = s.record(ctx, store.AuditEvent{Type: store.EventMemberAppCreate, ClientID: c.ID, Detail: detail})
	got, existing, err := s.store.CreateClient(ctx, c, 0)
	if err != nil {
		return nil, err
	}
	if existing {
		return &CreatedApp{ClientInfo: clientInfo(got), Existing: true}, nil
	}
	s.cfg.Logger.Info("member application created", "client_id", c.ID, "confidential", spec.Confidential)
	return &CreatedApp{ClientInfo: clientInfo(c), ClientSecret: secret}, nil
}

// UpdateApp changes a member application's name, redirect URIs, scopes
// and whether it gets DPoP-bound tokens only (not its type or secret). Narrower scopes apply to new
// authorizations and to refreshes (see the token endpoint), not to access
// tokens already issued, which expire within the hour.
func (s *Server) UpdateApp(ctx context.Context, id string, spec AppSpec) (ClientInfo, error) {
	c, err := s.clientOfKind(ctx, id, store.KindApp)
	if err != nil {
		return ClientInfo{}, err
	}
	if ie := spec.Normalize(); ie != nil {
		return ClientInfo{}, ie
	}
	c.Name, c.RedirectURIs, c.Scopes, c.DPoPBound = spec.Name, spec.RedirectURIs, spec.Scopes, spec.DPoPBound
	if err := s.store.PutClient(ctx, c); err != nil {
		return ClientInfo{}, err
	}
	s.cfg.Logger.Info("member application updated", "client_id", c.ID)
	return clientInfo(c), nil
}

// RegenerateSecret replaces a confidential application's secret; the old
// one stops working at once.
func (s *Server) RegenerateSecret(ctx context.Context, id string) (ClientInfo, string, error) {
	c, err := s.clientOfKind(ctx, id, store.KindApp)
	if err != nil {
		return ClientInfo{}, "", err
	}
	if c.Public() {
		return ClientInfo{}, "", NewInputError("admin.invalid.public_no_secret")
	}
	secret := newToken(prefixSecret)
	c.SecretHash = hashSecret(secret)
	ctx = s.record(ctx, store.AuditEvent{Type: store.EventSecretRotated, ClientID: c.ID})
	if err := s.store.PutClient(ctx, c); err != nil {
		return ClientInfo{}, "", err
	}
	s.cfg.Logger.Info("client secret regenerated", "client_id", c.ID)
	return clientInfo(c), secret, nil
}

// DeleteClient deletes a member application or a loopback client and
// revokes its grants, so its tokens stop working at once. It returns how
// many grants were revoked.
func (s *Server) DeleteClient(ctx context.Context, id string) (int, error) {
	c, err := s.clientOfKind(ctx, id, store.KindApp, store.KindLoopback)
	if err != nil {
		return 0, err
	}
	ctx = s.record(ctx, store.AuditEvent{Type: store.EventClientDeleted, ClientID: c.ID, Detail: c.Kind})
	n, err := s.store.DeleteClient(ctx, c.ID)
	if errors.Is(err, store.ErrNotFound) {
		// Deleted meanwhile by another request: its grants may remain.
		n, err = s.store.RevokeClientGrants(ctx, c.ID)
	}
	s.cache.purge()
	if err != nil {
		return n, err
	}
	s.cfg.Logger.Info("client deleted", "client_id", c.ID, "kind", c.Kind, "grants_revoked", n)
	return n, nil
}

// ReviewClient records the operator's decision on a metadata-document
// client: the scopes it may get and whether it is reviewed. Unreviewed,
// it keeps the limit to read and identity scopes among them.
func (s *Server) ReviewClient(ctx context.Context, id string, scopes []string, reviewed bool) (ClientInfo, error) {
	c, err := s.clientOfKind(ctx, id, store.KindMetadata)
	if err != nil {
		return ClientInfo{}, err
	}
	scopes, ie := parseMemberScopes(scopes)
	if ie != nil {
		return ClientInfo{}, ie
	}
	c.Scopes, c.Reviewed = scopes, reviewed
	if err := s.store.PutClient(ctx, c); err != nil {
		return ClientInfo{}, err
	}
	s.cfg.Logger.Info("metadata-document client reviewed", "client_id", c.ID,
		"reviewed", reviewed, "scopes", strings.Join(scopes, " "))
	return clientInfo(c), nil
}

// ClientOfKind is a stored client of one of the kinds, as an operator
// sees it: store.ErrNotFound when there is none, ErrWrongKind when it is
// of another kind.
func (s *Server) ClientOfKind(ctx context.Context, id string, kinds ...string) (ClientInfo, error) {
	c, err := s.clientOfKind(ctx, id, kinds...)
	if err != nil {
		return ClientInfo{}, err
	}
	return clientInfo(c), nil
}

// clientOfKind loads a stored client of one of the kinds; store.ErrNotFound
// when there is none, ErrWrongKind when it is of another kind.
func (s *Server) clientOfKind(ctx context.Context, id string, kinds ...string) (*store.Client, error) {
	if id == "" || len(id) > MaxClientIDLen {
		return nil, store.ErrNotFound
	}
	c, err := s.store.GetClient(ctx, id)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(kinds, c.Kind) {
		return nil, ErrWrongKind
	}
	return c, nil
}
