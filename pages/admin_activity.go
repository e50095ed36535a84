package pages

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/store"
)

// The admin area's activity view: the audit trail of one application,
// of one person, or of one person with one application, newest first,
// a page at a time by the store's cursor, each event in the operator's
// language. An application no longer known still has its history; one
// of which nothing is known at all is a 404.

// activityPageSize is how many events a page of the view shows (a
// variable for the tests).
var activityPageSize = 50

type adminActivityView struct {
	adminPage
	// ClientID and Subject are what the view is of; Name and Kind the
	// application's when it is still known.
	ClientID, Name, Kind, Subject string
	Events                        []activityEvent
	// Next is the following page, First the first: both empty on the first page.
	Next, First string
	More        bool
}

// activity shows a page of the events of the application (client_id)
// and/or the person (subject) the link names.
func (a *adminCtx) activity() {
	ctx := a.r.Context()
	q := a.r.URL.Query()
	clientID, subject, cursor := q.Get("client_id"), q.Get("subject"), q.Get("after")
	if (clientID == "" && subject == "") || len(clientID) > authserver.MaxClientIDLen || len(subject) > authserver.MaxClientIDLen {
		a.fail(http.StatusBadRequest, "admin.error.bad_activity_link")
		return
	}
	page, err := a.as.Audit(ctx, store.AuditQuery{Subject: subject, ClientID: clientID,
		Limit: activityPageSize, Cursor: cursor})
	switch {
	case errors.Is(err, store.ErrBadCursor):
		a.fail(http.StatusBadRequest, "admin.error.bad_activity_link")
		return
	case err != nil:
		a.unavailable("reading the activity", err)
		return
	}
	v := adminActivityView{ClientID: clientID, Name: clientID, Subject: subject, More: cursor != ""}
	if clientID != "" {
		c, err := a.as.KnownClient(ctx, clientID)
		if err != nil {
			a.unavailable("loading the client", err)
			return
		}
		if c == nil && len(page.Events) == 0 && cursor == "" {
			a.fail(http.StatusNotFound, "admin.error.no_app")
			return
		}
		if c != nil {
			v.Name, v.Kind = c.Name, c.Kind
		}
	}
	switch {
	case clientID == "":
		v.adminPage = a.page("admin.activity_person_title")
	case subject == "":
		v.adminPage = a.page("admin.activity_app_title", "name", v.Name)
	default:
		v.adminPage = a.page("admin.activity_both_title", "name", v.Name)
	}
	for i := range page.Events {
		v.Events = append(v.Events, activityIn(a.lang, &page.Events[i]))
	}
	link := func(after string) string {
		q := url.Values{}
		if clientID != "" {
			q.Set("client_id", clientID)
		}
		if subject != "" {
			q.Set("subject", subject)
		}
		if after != "" {
			q.Set("after", after)
		}
		return adminPathActivity + "?" + q.Encode()
	}
	if page.Next != "" {
		v.Next = link(page.Next)
	}
	if v.More {
		v.First = link("")
	}
	a.render(http.StatusOK, activityTmpl, v)
}
