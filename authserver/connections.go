package authserver

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// ConnectionInfo is a connection as people and operators see it: one row
// per application on a person's page, per person on an application's.
type ConnectionInfo struct {
	ClientID   string `json:"client_id"`
	ClientName string `json:"client_name"`
	// Kind is the client's kind, empty when it is no longer known.
	Kind    string `json:"kind,omitempty"`
	Subject string `json:"sub"`
	Email   string `json:"email,omitempty"`
	Name    string `json:"name,omitempty"`
	// Grants counts the live authorizations: "on 2 devices".
	Grants    int      `json:"grants"`
	Scopes    []string `json:"scopes"`
	Audiences []string `json:"audiences"`
	// CreatedAt is the first authorization; LastUsedAt the latest
	// authorization or refresh of any.
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at"`
}

// ConnectionPage is one page of connections; Next, when set, is the
// cursor of the following page.
type ConnectionPage struct {
	Connections []ConnectionInfo `json:"connections"`
	Next        string           `json:"next,omitempty"`
}

// ListConnections returns a page of the connections of a person (one per
// application) or of a client (one per person). Exactly one of f.Subject
// and f.ClientID is set. However many times a person authorized one
// application, it is one connection, so a person's every application is
// on the first pages.
func (s *Server) ListConnections(ctx context.Context, f GrantFilter) (ConnectionPage, error) {
	if (f.Subject == "") == (f.ClientID == "") {
		return ConnectionPage{}, &InputError{Msg: "Name either the person (subject) or the application (client_id)."}
	}
	if len(f.Subject) > MaxClientIDLen || len(f.ClientID) > MaxClientIDLen {
		return ConnectionPage{Connections: []ConnectionInfo{}}, nil
	}
	after, err := decodeGroupCursor(f.Cursor)
	if err != nil {
		return ConnectionPage{}, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultGrantPage
	}
	limit = min(limit, store.MaxGrantPage-1)
	// One more than the page tells whether a next page exists.
	conns, err := s.store.ListConnections(ctx, store.ConnectionQuery{Subject: f.Subject, ClientID: f.ClientID, After: after, Limit: limit + 1})
	if err != nil {
		return ConnectionPage{}, err
	}
	page := ConnectionPage{Connections: make([]ConnectionInfo, 0, min(len(conns), limit))}
	if len(conns) > limit {
		conns = conns[:limit]
		last := conns[limit-1]
		group := last.Identity.Subject
		if f.Subject != "" {
			group = last.ClientID
		}
		page.Next = encodeGroupCursor(group)
	}
	clients := map[string]*store.Client{}
	for _, c := range conns {
		client, err := s.knownClient(ctx, c.ClientID, clients)
		if err != nil {
			return ConnectionPage{}, err
		}
		page.Connections = append(page.Connections, connectionInfo(c, client))
	}
	return page, nil
}

func connectionInfo(c *store.Connection, client *store.Client) ConnectionInfo {
	info := ConnectionInfo{ClientID: c.ClientID, ClientName: c.ClientID, Subject: c.Identity.Subject,
		Email: c.Identity.Email, Name: c.Identity.Name, Grants: c.Grants, Scopes: c.Scopes,
		Audiences: c.Audiences, CreatedAt: c.Since.UTC(), LastUsedAt: c.LastUsed.UTC()}
	if client != nil {
		info.ClientName, info.Kind = displayName(client), client.Kind
	}
	if info.Scopes == nil {
		info.Scopes = []string{}
	}
	return info
}

// OperatorOnly reports whether every grant of the connection acts as a
// school operator: such a connection belongs to the admin side of a
// person who is one, and is listed to nobody else.
func (c ConnectionInfo) OperatorOnly() bool {
	for _, a := range c.Audiences {
		if a != store.AudienceOperator {
			return false
		}
	}
	return len(c.Audiences) > 0
}

// The words the pages show of a connection, as of a grant.
func (c ConnectionInfo) grant() GrantInfo {
	return GrantInfo{ClientID: c.ClientID, Kind: c.Kind, Scopes: c.Scopes, Subject: c.Subject, Email: c.Email, Name: c.Name}
}

func (c ConnectionInfo) Person() string { return c.grant().Person() }

// Disconnection is what a disconnect ended.
type Disconnection struct {
	ClientID   string `json:"client_id"`
	ClientName string `json:"client_name"`
	Subject    string `json:"sub"`
	// Ended counts the grants revoked by this disconnect: 0 when nothing
	// was live any more (ErrAlreadyDisconnected).
	Ended int `json:"grants_ended"`
	// Grant is the grant asked for, when one was (DisconnectRequest.GrantID).
	Grant *GrantInfo `json:"grant,omitempty"`
}

// DisconnectClient ends subject's whole connection to clientID: every
// grant the application holds for the person, so every access and
// refresh token of them, stops working at the next request, here and
// (through the store's notifications) at the site's other instances, and
// the person's consent is forgotten, so the next authorization asks
// again. by names who asked, for the metric (one count per grant ended)
// and the log. ErrAlreadyDisconnected, with the rest filled in, means no
// grant was live and only a remembered consent was forgotten;
// store.ErrNotFound, that the person has neither with this application.
func (s *Server) DisconnectClient(ctx context.Context, clientID, subject, by string) (Disconnection, error) {
	if clientID == "" || len(clientID) > MaxClientIDLen || subject == "" || len(subject) > MaxClientIDLen {
		return Disconnection{}, store.ErrNotFound
	}
	ctx = s.record(ctx, s.disconnectEvent(ctx, by, store.AuditEvent{Subject: subject, ClientID: clientID}))
	n, err := s.store.DisconnectClient(ctx, clientID, subject)
	if err != nil {
		return Disconnection{}, err
	}
	s.cache.purge()
	d := Disconnection{ClientID: clientID, ClientName: clientID, Subject: subject, Ended: n}
	if c, err := s.knownClient(ctx, clientID, map[string]*store.Client{}); err == nil && c != nil {
		// Without it, the connection is ended all the same; only its name is missing.
		d.ClientName = displayName(c)
	}
	if n == 0 {
		return d, ErrAlreadyDisconnected
	}
	for range n {
		s.cfg.Observer.GrantDisconnected(by)
	}
	s.cfg.Logger.Info("application disconnected", "client_id", clientID, "grants", n, "by", by)
	return d, nil
}

// DisconnectRequest is what an operator asks to end for a person
// (Subject): one grant (GrantID), or everything an application holds for
// them (ClientID). Exactly one of the two is named.
type DisconnectRequest struct {
	GrantID, ClientID, Subject string
}

// Check refuses a request that does not make the choice, in words an
// operator can act on.
func (r DisconnectRequest) Check() error {
	switch {
	case r.GrantID != "" && r.ClientID != "":
		return NewInputError("admin.invalid.disconnect_both")
	case r.GrantID == "" && r.ClientID == "":
		return NewInputError("admin.invalid.disconnect_none")
	case r.Subject == "":
		return NewInputError("admin.invalid.disconnect_subject")
	}
	return nil
}

// Disconnect ends what r names, as DisconnectGrant or DisconnectClient
// does. A request that names both or neither of a grant and an
// application, or no person, is an *InputError.
func (s *Server) Disconnect(ctx context.Context, r DisconnectRequest, by string) (Disconnection, error) {
	if err := r.Check(); err != nil {
		return Disconnection{}, err
	}
	if r.ClientID != "" {
		return s.DisconnectClient(ctx, r.ClientID, r.Subject, by)
	}
	info, err := s.DisconnectGrant(ctx, r.GrantID, r.Subject, by)
	if err != nil && !errors.Is(err, ErrAlreadyDisconnected) {
		return Disconnection{}, err
	}
	d := Disconnection{ClientID: info.ClientID, ClientName: info.ClientName, Subject: r.Subject, Grant: &info}
	if err == nil {
		d.Ended = 1
	}
	return d, err
}

// ConnectedApp is an application with how many people are connected to
// it, and by how many live grants (a person who allowed it on two devices
// is one person and two grants).
type ConnectedApp struct {
	ClientID string `json:"client_id"`
	Name     string `json:"client_name"`
	// Kind is empty for a client no longer known.
	Kind   string `json:"kind,omitempty"`
	People int    `json:"people"`
	Grants int    `json:"grants"`
}

// ConnectedApps is every application holding live grants, and every
// configured vendor, with how many people are connected to it (and by how
// many grants), most connected first, then by name.
// Clients are few (registrations are capped), so naming them all costs one
// read.
func (s Reads) ConnectedApps(ctx context.Context) ([]ConnectedApp, error) {
	counts, err := s.store.GrantCounts(ctx)
	if err != nil {
		return nil, err
	}
	clients, err := s.store.ListClients(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[string]*store.Client{}
	for _, c := range clients {
		byID[c.ID] = c
	}
	for id, c := range s.vendors {
		byID[id] = c
	}
	out := []ConnectedApp{}
	for id, n := range counts {
		app := ConnectedApp{ClientID: id, Name: id, People: n.People, Grants: n.Grants}
		if c := byID[id]; c != nil {
			app.Name, app.Kind = displayName(c), c.Kind
		}
		out = append(out, app)
	}
	for id, c := range s.vendors {
		if counts[id].Grants == 0 {
			out = append(out, ConnectedApp{ClientID: id, Name: displayName(c), Kind: c.Kind})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].People != out[j].People {
			return out[i].People > out[j].People
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ClientID < out[j].ClientID
	})
	return out, nil
}
