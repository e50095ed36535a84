package pages

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/store"
)

// The admin area's view of who is connected to what: a count of people
// per application on the overview (authserver's ConnectedApps), and per
// application the people, one row each with a Disconnect button that
// ends their whole connection.

// people lists who is connected to one application, a page of people at
// a time.
func (a *adminCtx) people() {
	ctx := a.r.Context()
	q := a.r.URL.Query()
	id := q.Get("client_id")
	if id == "" || len(id) > authserver.MaxClientIDLen {
		a.fail(http.StatusNotFound, "admin.error.no_app")
		return
	}
	cursor := q.Get("after")
	page, err := a.as.ListConnections(ctx, authserver.GrantFilter{ClientID: id, Cursor: cursor})
	var ie *authserver.InputError
	switch {
	case errors.As(err, &ie):
		a.fail(http.StatusBadRequest, "admin.error.bad_people_link")
		return
	case err != nil:
		a.unavailable("listing the connected people", err)
		return
	}
	c, err := a.as.KnownClient(ctx, id)
	if err != nil {
		a.unavailable("loading the client", err)
		return
	}
	counts, err := a.as.GrantCounts(ctx)
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
		v.Name, v.Kind = c.Name, c.Kind
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
	req := authserver.DisconnectRequest{GrantID: form.Get("grant_id"), ClientID: form.Get("client_id"), Subject: form.Get("subject")}
	d, err := a.as.Disconnect(a.r.Context(), req, authserver.DisconnectedByOperator)
	done := "disconnected"
	var ie *authserver.InputError
	switch {
	case errors.As(err, &ie):
		a.failInput(ie, "admin.error.unchanged")
		return
	case errors.Is(err, authserver.ErrAlreadyDisconnected):
		done = "already"
	case errors.Is(err, store.ErrNotFound):
		a.fail(http.StatusNotFound, "admin.error.nobody_matches")
		return
	case err != nil:
		a.unavailable("disconnecting a person", err)
		return
	}
	a.p.cfg.Logger.Info("admin: person disconnected", "client_id", d.ClientID, "grant_id", req.GrantID,
		"grants", d.Ended, "by", a.id.Subject)
	a.redirect(adminPathPeople, url.Values{"client_id": {d.ClientID}, "done": {done}})
}
