package authserver

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// Connected applications: the grants people gave, listed for the person
// (account.go), for the operator (the admin area and Caddy's admin API),
// and ended by either. A grant is one authorization of a client by a
// person; its tokens live and die with it. A person who authorized a
// client several times (two devices, prompt=consent) holds several, and
// people see them as one connection (connections.go), which a disconnect
// ends whole.

// Who ended a grant, as the disconnect metric counts it.
const (
	DisconnectedByMember   = "member"
	DisconnectedByOperator = "operator"
	DisconnectedByClient   = "client"
)

// GrantInfo is a grant as people and operators see it: never a token.
type GrantInfo struct {
	GrantID    string `json:"grant_id"`
	ClientID   string `json:"client_id"`
	ClientName string `json:"client_name"`
	// Kind is the client's kind (vendor, app, metadata, loopback), empty
	// when the client is no longer known.
	Kind     string   `json:"kind,omitempty"`
	Audience string   `json:"audience"`
	Subject  string   `json:"sub"`
	Email    string   `json:"email,omitempty"`
	Name     string   `json:"name,omitempty"`
	Scopes   []string `json:"scopes"`
	// CreatedAt is when the person authorized it; RefreshedAt when its
	// tokens were last refreshed, absent if never.
	CreatedAt   time.Time  `json:"created_at"`
	RefreshedAt *time.Time `json:"refreshed_at,omitempty"`
	Revoked     bool       `json:"revoked,omitempty"`
}

// GrantPage is one page of a list of grants; Next, when set, is the
// cursor of the following page.
type GrantPage struct {
	Grants []GrantInfo `json:"grants"`
	Next   string      `json:"next,omitempty"`
}

// GrantFilter selects the grants to list: of one person or one client,
// from a cursor a previous page gave, Limit at a time.
type GrantFilter struct {
	Subject, ClientID, Cursor string
	Limit                     int
}

// DefaultGrantPage is the page size of the pages and of the admin API
// when none is asked for.
const DefaultGrantPage = 50

// errBadCursor is a cursor this server did not give.
var errBadCursor = &InputError{Msg: "The list position (cursor) is not one this server gave; start from the first page."}

// maxCursorLen bounds a cursor: it holds a client id (up to
// MaxClientIDLen) or a subject, base64 encoded.
const maxCursorLen = 4096

// encodeCursor makes a list position opaque to its users: its time, its
// grant and its group (the grant's client in a person's list, its person
// in a client's). Grant ids hold no dot; the group, last, may.
func encodeCursor(c store.GrantCursor, bySubject bool) string {
	group := c.Subject
	if bySubject {
		group = c.ClientID
	}
	raw := strconv.FormatInt(c.CreatedAt.UnixMicro(), 10) + "." + c.ID + "." + group
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func decodeCursor(s string, bySubject bool) (store.GrantCursor, error) {
	if s == "" {
		return store.GrantCursor{}, nil
	}
	raw, err := decodeOpaque(s)
	if err != nil {
		return store.GrantCursor{}, err
	}
	micros, rest, ok := strings.Cut(raw, ".")
	id, group, ok2 := strings.Cut(rest, ".")
	n, err := strconv.ParseInt(micros, 10, 64)
	if !ok || !ok2 || err != nil || id == "" {
		return store.GrantCursor{}, errBadCursor
	}
	c := store.GrantCursor{CreatedAt: time.UnixMicro(n).UTC(), ID: id, Subject: group}
	if bySubject {
		c.Subject, c.ClientID = "", group
	}
	return c, nil
}

// encodeGroupCursor is the position after a connection: its group.
func encodeGroupCursor(group string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("@" + group))
}

func decodeGroupCursor(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	raw, err := decodeOpaque(s)
	if err != nil {
		return "", err
	}
	group, ok := strings.CutPrefix(raw, "@")
	if !ok {
		return "", errBadCursor
	}
	return group, nil
}

func decodeOpaque(s string) (string, error) {
	if len(s) > maxCursorLen {
		return "", errBadCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return "", errBadCursor
	}
	return string(raw), nil
}

// ListGrants returns a page of the live grants of a person (grouped by
// application) or of a client (grouped by person). Exactly one of
// f.Subject and f.ClientID is set.
func (s Reads) ListGrants(ctx context.Context, f GrantFilter) (GrantPage, error) {
	if (f.Subject == "") == (f.ClientID == "") {
		return GrantPage{}, &InputError{Msg: "Name either the person (subject) or the application (client_id)."}
	}
	if len(f.Subject) > MaxClientIDLen || len(f.ClientID) > MaxClientIDLen {
		return GrantPage{Grants: []GrantInfo{}}, nil
	}
	after, err := decodeCursor(f.Cursor, f.Subject != "")
	if err != nil {
		return GrantPage{}, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultGrantPage
	}
	limit = min(limit, store.MaxGrantPage-1)
	// One more than the page tells whether a next page exists.
	grants, err := s.store.ListGrants(ctx, store.GrantQuery{Subject: f.Subject, ClientID: f.ClientID, After: after, Limit: limit + 1})
	if err != nil {
		return GrantPage{}, err
	}
	page := GrantPage{Grants: make([]GrantInfo, 0, min(len(grants), limit))}
	if len(grants) > limit {
		grants = grants[:limit]
		page.Next = encodeCursor(store.CursorOf(grants[limit-1]), f.Subject != "")
	}
	clients := map[string]*store.Client{}
	for _, g := range grants {
		c, err := s.knownClient(ctx, g.ClientID, clients)
		if err != nil {
			return GrantPage{}, err
		}
		page.Grants = append(page.Grants, grantInfo(g, c))
	}
	return page, nil
}

// knownClient names a grant's client without fetching anything: a
// vendor, a stored client, or nil when it is no longer known. Answers are
// kept in seen for the rest of the page.
func (s Reads) knownClient(ctx context.Context, id string, seen map[string]*store.Client) (*store.Client, error) {
	if c, ok := seen[id]; ok {
		return c, nil
	}
	c, ok := s.vendors[id]
	if !ok {
		var err error
		c, err = s.store.GetClient(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			c = nil
		case err != nil:
			return nil, err
		}
	}
	seen[id] = c
	return c, nil
}

// KnownClient is the client that id names, a vendor or a stored one, as
// an operator sees it; nil when it is no longer known.
func (s *Server) KnownClient(ctx context.Context, id string) (*ClientInfo, error) {
	c, err := s.knownClient(ctx, id, map[string]*store.Client{})
	if err != nil || c == nil {
		return nil, err
	}
	info := clientInfo(c)
	return &info, nil
}

func grantInfo(g *store.Grant, c *store.Client) GrantInfo {
	info := GrantInfo{GrantID: g.ID, ClientID: g.ClientID, ClientName: g.ClientID, Audience: g.Audience,
		Subject: g.Identity.Subject, Email: g.Identity.Email, Name: g.Identity.Name, Scopes: g.Scopes,
		CreatedAt: g.CreatedAt.UTC(), Revoked: g.Revoked}
	if !g.RefreshedAt.IsZero() {
		t := g.RefreshedAt.UTC()
		info.RefreshedAt = &t
	}
	if c != nil {
		info.ClientName, info.Kind = displayName(c), c.Kind
	}
	return info
}

// GrantCounts returns, for each client holding live grants, how many
// people are connected to it and by how many grants (a person who
// authorized it on two devices holds two).
func (s *Server) GrantCounts(ctx context.Context) (map[string]store.GrantCount, error) {
	return s.store.GrantCounts(ctx)
}

// ErrAlreadyDisconnected is returned, with the grant, when it had been
// revoked before: nothing was left to end but the remembered consent.
var ErrAlreadyDisconnected = errors.New("the grant had been revoked already")

// DisconnectGrant ends the grant id of subject: every token of it stops
// working at the next request, here and (through the store's
// notifications) at the site's other instances, and the person's consent
// to its client is forgotten, so the next authorization asks again. by
// names who asked, for the metric and the log. store.ErrNotFound means no such
// grant of this person.
func (s *Server) DisconnectGrant(ctx context.Context, id, subject, by string) (GrantInfo, error) {
	if id == "" || len(id) > 128 || subject == "" || len(subject) > MaxClientIDLen {
		return GrantInfo{}, store.ErrNotFound
	}
	ctx = s.record(ctx, s.disconnectEvent(ctx, by, store.AuditEvent{Subject: subject, Target: id}))
	g, err := s.store.DisconnectGrant(ctx, id, subject)
	if err != nil {
		return GrantInfo{}, err
	}
	s.cache.purge()
	c, err := s.knownClient(ctx, g.ClientID, map[string]*store.Client{})
	if err != nil {
		// The grant is ended; only its client's name is missing.
		c = nil
	}
	info := grantInfo(g, c)
	if g.Revoked {
		return info, ErrAlreadyDisconnected
	}
	s.cfg.Observer.GrantDisconnected(by)
	s.cfg.Logger.Info("grant disconnected", "client_id", g.ClientID, "grant_id", g.ID, "by", by)
	return info, nil
}

// Person is who gave the grant, as the operator's pages show it.
func (g GrantInfo) Person() string {
	return PersonLabel(&store.Identity{Subject: g.Subject, Name: g.Name, Email: g.Email})
}
