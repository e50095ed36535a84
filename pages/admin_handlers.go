package pages

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// The pages of the admin area, one handler per route of adminRoutes.

// adminNotices are the fixed messages (keys) a redirect may ask for;
// nothing of the query string is echoed.
var adminNotices = map[string]string{
	"on":           "admin.notice.on",
	"off":          "admin.notice.off",
	"saved":        "admin.notice.saved",
	"deleted":      "admin.notice.deleted",
	"reviewed":     "admin.notice.reviewed",
	"disconnected": "admin.notice.disconnected",
	"already":      "admin.notice.already",
	"resubmit":     "admin.notice.resubmit",
}

func (a *adminCtx) notice() string {
	if key, ok := adminNotices[a.r.URL.Query().Get("done")]; ok {
		return a.t(key)
	}
	return ""
}

func (a *adminCtx) toOverview() { a.redirect(sitepath.AdminApplications, nil) }

// overview lists everything; with MCP connections off, only the switch
// and the connected applications. Each list is paged on its own.
func (a *adminCtx) overview() {
	on, err := a.as.MCPConnectionsEnabled(a.r.Context())
	if err != nil {
		a.unavailable("reading the MCP connections switch", err)
		return
	}
	v := adminOverview{adminPage: a.page("admin.overview"), Enabled: on}
	v.Notice = a.notice()
	connected, err := a.as.ConnectedApps(a.r.Context())
	if err != nil {
		a.unavailable("counting the connected people", err)
		return
	}
	var apps, metadata, loopback []authserver.ClientInfo
	if v.Enabled {
		clients, err := a.as.ListClients(a.r.Context())
		if err != nil {
			a.unavailable("listing the clients", err)
			return
		}
		for _, c := range clients {
			switch c.Kind {
			case store.KindApp:
				apps = append(apps, c)
			case store.KindMetadata:
				metadata = append(metadata, c)
			case store.KindLoopback:
				loopback = append(loopback, c)
			}
		}
	}
	rows := metadataByUse(metadata, connected)
	pages := newListPager(a.r.URL.Query(), a.p.adminPageSize)
	var ok bool
	if v.Connected, v.ConnectedPages, ok = pageOf(a, pages, "connected", connected); !ok {
		return
	}
	if v.Apps, v.AppsPages, ok = pageOf(a, pages, "apps", apps); !ok {
		return
	}
	if v.Metadata, v.MetadataPages, ok = pageOf(a, pages, "metadata", rows); !ok {
		return
	}
	if v.Loopback, v.LoopbackPages, ok = pageOf(a, pages, "loopback", loopback); !ok {
		return
	}
	a.render(http.StatusOK, overviewTmpl, v)
}

// pageOf is the page of list the request asks for, answering 400 itself
// (and reporting false) for a page that is not a number or not in the list.
func pageOf[T any](a *adminCtx, p listPager, name string, list []T) ([]T, pager, bool) {
	rows, pg, bad := paginate(p, name, list)
	if bad != nil {
		a.fail(http.StatusBadRequest, "admin.error.bad_page", "page", bad.value)
		return nil, pager{}, false
	}
	return rows, pg, true
}

// toggle switches MCP connections. The form names the wanted state, so a
// repeated submission changes nothing.
func (a *adminCtx) toggle() {
	var on bool
	switch a.r.PostForm.Get("enabled") {
	case "on":
		on = true
	case "off":
	default:
		a.fail(http.StatusBadRequest, "admin.error.switch_unclear")
		return
	}
	if err := a.as.SetMCPConnections(a.r.Context(), on); err != nil {
		a.unavailable("saving the MCP connections switch", err)
		return
	}
	a.p.cfg.Logger.Info("admin: MCP connections switched", "on", on, "by", a.id.Subject)
	done := "off"
	if on {
		done = "on"
	}
	a.redirect(sitepath.AdminApplications, url.Values{"done": {done}})
}

// appFormView fills the application form: the creation form without c,
// else c's. msg is why it was refused, "" when it was not.
func (a *adminCtx) appFormView(c *authserver.ClientInfo, in authserver.AppSpec, msg string) adminAppForm {
	title := a.page("admin.new_app")
	if c != nil {
		title = a.page("admin.edit_title", "name", c.Name)
	}
	v := adminAppForm{adminPage: title, Name: in.Name,
		RedirectURIs: strings.Join(in.RedirectURIs, "\n"), Confidential: in.Confidential,
		DPoPBound: in.DPoPBound, Scopes: scopeChoices(a.lang, in.Scopes)}
	v.Error = msg
	if c != nil {
		v.ClientID, v.Confidential = c.ClientID, c.Confidential()
	}
	return v
}

// newApp shows the creation form. Its form nonce lets a resubmission of
// the same form be recognised instead of creating a second application.
func (a *adminCtx) newApp() {
	v := a.appFormView(nil, authserver.AppSpec{}, "")
	v.FormNonce = formNonce()
	a.render(http.StatusOK, appFormTmpl, v)
}

// createApp creates a member application; a resubmitted form (same
// nonce) leads to the application it created, without its secret.
func (a *adminCtx) createApp() {
	form := a.r.PostForm
	spec, ie := parseAppForm(form, true)
	nonce := form.Get("form_nonce")
	if ie == nil && (nonce == "" || len(nonce) > maxFormNonceLen) {
		ie = authserver.NewInputError("admin.error.incomplete")
	}
	if ie != nil {
		a.refuseAppForm(nil, nonce, ie.In(a.lang))
		return
	}
	app, err := a.as.CreateApp(a.r.Context(), spec, nonce)
	if err != nil {
		a.clientFailure("creating the application", err)
		return
	}
	if app.Existing {
		a.redirect(adminPathEdit, url.Values{"client_id": {app.ClientID}, "done": {"resubmit"}})
		return
	}
	a.p.cfg.Logger.Info("admin: member application created", "client_id", app.ClientID, "by", a.id.Subject)
	a.showSecret(a.page("admin.created_title"), app.ClientInfo, app.ClientSecret, true)
}

// refuseAppForm shows the form again with what the operator typed and
// why it was refused.
func (a *adminCtx) refuseAppForm(c *authserver.ClientInfo, nonce, msg string) {
	form := a.r.PostForm
	in := authserver.AppSpec{Name: form.Get("name"), Scopes: form["scope"],
		RedirectURIs: []string{strings.TrimSpace(form.Get("redirect_uris"))},
		Confidential: form.Get("client_type") == "confidential", DPoPBound: form.Get("dpop_bound") == "on"}
	v := a.appFormView(c, in, msg)
	if c == nil {
		v.FormNonce = nonce
		if nonce == "" || len(nonce) > maxFormNonceLen {
			v.FormNonce = formNonce()
		}
	}
	a.render(http.StatusBadRequest, appFormTmpl, v)
}

// showSecret answers the creating (or regenerating) POST directly with
// 200, the one exception to post/redirect/get: the secret then exists
// only in this response, never in a URL, a log or the store (which keeps
// its hash alone), and it works the same across gateway instances. The
// page is no-store; a resubmitted creation form is recognised by its
// nonce and does not create or reveal anything again.
func (a *adminCtx) showSecret(page adminPage, c authserver.ClientInfo, secret string, created bool) {
	v := adminSecretView{adminPage: page, ClientID: c.ClientID, Name: c.Name,
		Secret: secret, AuthMethod: c.AuthMethod, Created: created, Scopes: c.Scopes,
		RedirectURIs: c.RedirectURIs, Issuer: a.as.Issuer()}
	a.render(http.StatusOK, secretTmpl, v)
}

// loadClient finds a stored client of one of the kinds, answering 404
// itself when there is none.
func (a *adminCtx) loadClient(kinds ...string) (*authserver.ClientInfo, bool) {
	c, err := a.as.ClientOfKind(a.r.Context(), a.target(), kinds...)
	if err != nil {
		a.clientFailure("loading the client", err)
		return nil, false
	}
	return &c, true
}

// clientFailure answers an error of the client operations: 404 for a
// missing client (or one of a kind the page does not handle), 400 for a
// refused input, 503 for the store.
func (a *adminCtx) clientFailure(what string, err error) {
	var ie *authserver.InputError
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, authserver.ErrWrongKind):
		a.fail(http.StatusNotFound, "admin.error.no_client")
	case errors.As(err, &ie):
		a.failInput(ie, "")
	default:
		a.unavailable(what, err)
	}
}

func (a *adminCtx) target() string {
	if a.r.Method == http.MethodPost {
		return a.r.PostForm.Get("client_id")
	}
	return a.r.URL.Query().Get("client_id")
}

func (a *adminCtx) editApp() {
	c, ok := a.loadClient(store.KindApp)
	if !ok {
		return
	}
	v := a.appFormView(c,
		authserver.AppSpec{Name: c.Name, RedirectURIs: c.RedirectURIs, Scopes: c.Scopes, DPoPBound: c.DPoPBound}, "")
	v.Notice = a.notice()
	a.render(http.StatusOK, appFormTmpl, v)
}

func (a *adminCtx) updateApp() {
	c, ok := a.loadClient(store.KindApp)
	if !ok {
		return
	}
	spec, ie := parseAppForm(a.r.PostForm, false)
	if ie != nil {
		a.refuseAppForm(c, "", ie.In(a.lang))
		return
	}
	if _, err := a.as.UpdateApp(a.r.Context(), c.ClientID, spec); err != nil {
		a.clientFailure("saving the application", err)
		return
	}
	a.p.cfg.Logger.Info("admin: member application updated", "client_id", c.ClientID, "by", a.id.Subject)
	a.redirect(sitepath.AdminApplications, url.Values{"done": {"saved"}})
}

// regenerateSecret replaces a confidential application's secret; the old
// one stops working at once (tokens already issued stay valid, but no
// refresh succeeds with the old secret).
func (a *adminCtx) regenerateSecret() {
	info, secret, err := a.as.RegenerateSecret(a.r.Context(), a.target())
	if err != nil {
		a.clientFailure("saving the new secret", err)
		return
	}
	a.p.cfg.Logger.Info("admin: client secret regenerated", "client_id", info.ClientID, "by", a.id.Subject)
	a.showSecret(a.page("admin.secret_title", "name", info.Name), info, secret, false)
}

func (a *adminCtx) confirmDelete() {
	c, ok := a.loadClient(store.KindApp, store.KindLoopback)
	if !ok {
		return
	}
	a.render(http.StatusOK, deleteTmpl, adminDeleteView{adminPage: a.page("admin.delete_title", "name", c.Name),
		Client: *c, Loopback: c.Kind == store.KindLoopback})
}

// deleteClient deletes a member application or a loopback client and
// revokes its grants, so its tokens stop working at once.
func (a *adminCtx) deleteClient() {
	id := a.target()
	if _, err := a.as.DeleteClient(a.r.Context(), id); err != nil {
		a.clientFailure("deleting the client", err)
		return
	}
	a.p.cfg.Logger.Info("admin: client deleted", "client_id", id, "by", a.id.Subject)
	a.redirect(sitepath.AdminApplications, url.Values{"done": {"deleted"}})
}

func (a *adminCtx) reviewView(c *authserver.ClientInfo, scopes []string, reviewed bool, msg string) adminReviewView {
	v := adminReviewView{adminPage: a.page("admin.review_title", "name", c.Name), Client: *c,
		Scopes: scopeChoices(a.lang, scopes), Reviewed: reviewed}
	v.Error = msg
	return v
}

func (a *adminCtx) reviewForm() {
	c, ok := a.loadClient(store.KindMetadata)
	if !ok {
		return
	}
	a.render(http.StatusOK, reviewTmpl, a.reviewView(c, c.Scopes, c.Reviewed, ""))
}

// review records the operator's decision on a metadata-document client.
func (a *adminCtx) review() {
	c, ok := a.loadClient(store.KindMetadata)
	if !ok {
		return
	}
	form := a.r.PostForm
	var reviewed bool
	var msg string
	switch form.Get("status") {
	case "reviewed":
		reviewed = true
	case "unreviewed":
	default:
		msg = a.t("admin.invalid.choose_review")
	}
	if msg == "" {
		_, err := a.as.ReviewClient(a.r.Context(), c.ClientID, form["scope"], reviewed)
		var ie *authserver.InputError
		if !errors.As(err, &ie) {
			if err != nil {
				a.clientFailure("saving the review", err)
				return
			}
			a.p.cfg.Logger.Info("admin: metadata-document client reviewed", "client_id", c.ClientID, "by", a.id.Subject)
			a.redirect(sitepath.AdminApplications, url.Values{"done": {"reviewed"}})
			return
		}
		msg = ie.In(a.lang)
	}
	a.render(http.StatusBadRequest, reviewTmpl, a.reviewView(c, form["scope"], reviewed, msg))
}
