package authserver

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sort"

	"github.com/schoolgate/schoolgate/store"
)

// The admin area's view of who is connected to what: a count of people
// per application on the overview, and per application the people, one
// row each with a Disconnect button that ends their whole connection.

// ConnectedApps is every application holding live grants, and every
// configured vendor, with how many people are connected to it (and by how
// many grants), most connected first, then by name.
// Clients are few (registrations are capped), so naming them all costs one
// read.
func (s *Server) ConnectedApps(ctx context.Context) ([]ConnectedApp, error) {
	counts, err := s.GrantCounts(ctx)
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

// people lists who is connected to one application, a page of people at
// a time.
func (a *adminCtx) people() {
	ctx := a.r.Context()
	q := a.r.URL.Query()
	id := q.Get("client_id")
	if id == "" || len(id) > maxClientIDLen {
		a.fail(http.StatusNotFound, "admin.error.no_app")
		return
	}
	cursor := q.Get("after")
	page, err := a.s.ListConnections(ctx, GrantFilter{ClientID: id, Cursor: cursor})
	var ie *InputError
	switch {
	case errors.As(err, &ie):
		a.fail(http.StatusBadRequest, "admin.error.bad_people_link")
		return
	case err != nil:
		a.unavailable("listing the connected people", err)
		return
	}
	c, err := a.s.knownClient(ctx, id, map[string]*store.Client{})
	if err != nil {
		a.unavailable("loading the client", err)
		return
	}
	counts, err := a.s.GrantCounts(ctx)
	if err != nil {
		a.unavailable("counting the connected people", err)
		return
	}
	n := counts[id]
	if c == nil && n.Grants == 0 && cursor == "" {
		a.fail(http.StatusNotFound, "admin.error.no_app")
		return
	}
	v := adminPeopleView{ClientID: id, Name: id, People: n.People, Grants: n.Grants, Connections: page.Connections, More: cursor != ""}
	if c != nil {
		v.Name, v.Kind = displayName(c), c.Kind
	}
	v.adminPage = a.page("admin.people_title", "name", v.Name)
	v.Notice = a.notice()
	if page.Next != "" {
		v.Next = adminPathPeople + "?" + url.Values{"client_id": {id}, "after": {page.Next}}.Encode()
	}
	a.render(http.StatusOK, peopleTmpl, v)
}

// disconnectPerson ends what the form names for its person (subject):
// everything the application (client_id) holds for them, which is what
// the people page's button asks, or one grant (grant_id). A form naming
// both, neither or no person is refused and changes nothing.
func (a *adminCtx) disconnectPerson() {
	form := a.r.PostForm
	req := DisconnectRequest{GrantID: form.Get("grant_id"), ClientID: form.Get("client_id"), Subject: form.Get("subject")}
	d, err := a.s.Disconnect(a.r.Context(), req, DisconnectedByOperator)
	done := "disconnected"
	var ie *InputError
	switch {
	case errors.As(err, &ie):
		a.failInput(ie, "admin.error.unchanged")
		return
	case errors.Is(err, ErrAlreadyDisconnected):
		done = "already"
	case errors.Is(err, store.ErrNotFound):
		a.fail(http.StatusNotFound, "admin.error.nobody_matches")
		return
	case err != nil:
		a.unavailable("disconnecting a person", err)
		return
	}
	a.s.cfg.Logger.Info("admin: person disconnected", "client_id", d.ClientID, "grant_id", req.GrantID,
		"grants", d.Ended, "by", a.id.Subject)
	a.redirect(adminPathPeople, url.Values{"client_id": {d.ClientID}, "done": {done}})
}
