package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/store"
)

func init() {
	caddy.RegisterModule(grantsAPI{})
}

// grantsAPI adds the connected applications of each school to Caddy's
// admin API (local and origin-checked by Caddy), as the admin area shows
// them:
//
//	GET  /schoolgate/grants?issuer=...                      every application people are connected to, with how many
//	                                                        people ("people") by how many live grants ("grants")
//	GET  /schoolgate/grants?issuer=...&client_id=...        the grants of one application, person by person, a page at a time
//	GET  /schoolgate/grants?issuer=...&subject=...          the grants of one person, application by application
//	     (&after=<next of the previous page>&limit=<1-499, default 50>)
//	POST /schoolgate/grants/revoke                          {"issuer", "grant_id", "subject"}: end one grant of a person, or
//	                                                        {"issuer", "client_id", "subject"}: end everything the application
//	                                                        holds for the person (every grant, every device)
type grantsAPI struct{}

// CaddyModule returns the Caddy module information.
func (grantsAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.schoolgate_grants",
		New: func() caddy.Module { return new(grantsAPI) },
	}
}

// Routes returns the admin routes.
func (grantsAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/schoolgate/grants", Handler: caddy.AdminHandlerFunc(audited(handleGrants))},
		{Pattern: "/schoolgate/grants/revoke", Handler: caddy.AdminHandlerFunc(audited(handleGrantRevoke))},
	}
}

var _ caddy.AdminRouter = grantsAPI{}

func handleGrants(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("use GET")}
	}
	q := r.URL.Query()
	s, release, err := siteOf(w, q.Get("issuer"))
	if err != nil {
		return err
	}
	defer release()
	clientID, subject := q.Get("client_id"), q.Get("subject")
	if clientID == "" && subject == "" {
		apps, err := s.Auth().ConnectedApps(r.Context())
		if err != nil {
			return s.WriteUnavailable(w, "counting the grants", err)
		}
		return writeAdminJSON(w, http.StatusOK, map[string]any{"clients": apps})
	}
	if clientID != "" && subject != "" {
		return badRequest(`name either the application (client_id) or the person (subject), not both`)
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit >= store.MaxGrantPage {
			return badRequest(fmt.Sprintf("limit must be a number from 1 to %d", store.MaxGrantPage-1))
		}
	}
	page, err := s.Auth().ListGrants(r.Context(), authserver.GrantFilter{ClientID: clientID, Subject: subject,
		Cursor: q.Get("after"), Limit: limit})
	var ie *authserver.InputError
	switch {
	case errors.As(err, &ie):
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: ie}
	case err != nil:
		return s.WriteUnavailable(w, "listing the grants", err)
	}
	return writeAdminJSON(w, http.StatusOK, page)
}

// revokeAnswer is what a revocation ended: "grants_ended" counts the
// grants revoked now, 0 with "already_revoked" when nothing was live any
// more (the person's consent to the application is forgotten all the same).
type revokeAnswer struct {
	Revoked        bool `json:"revoked"`
	AlreadyRevoked bool `json:"already_revoked,omitempty"`
	authserver.Disconnection
}

// handleGrantRevoke ends, for one person, either one grant (grant_id) or
// everything an application holds for them (client_id), and forgets
// their consent to that application, as the admin area's Disconnect does.
// The person is named too, as the list gives them, so that a mistyped id
// never ends someone else's. Naming both a grant and an application, or
// neither, is a 400 that changes nothing.
func handleGrantRevoke(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Issuer   string `json:"issuer"`
		GrantID  string `json:"grant_id"`
		ClientID string `json:"client_id"`
		Subject  string `json:"subject"`
	}
	if err := decodeAdminPost(r, &body); err != nil {
		return err
	}
	req := authserver.DisconnectRequest{GrantID: body.GrantID, ClientID: body.ClientID, Subject: body.Subject}
	if err := req.Check(); err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: err}
	}
	s, release, err := siteOf(w, body.Issuer)
	if err != nil {
		return err
	}
	defer release()
	d, err := s.Auth().Disconnect(r.Context(), req, authserver.DisconnectedByOperator)
	switch {
	case errors.Is(err, authserver.ErrAlreadyDisconnected):
		return writeAdminJSON(w, http.StatusOK, revokeAnswer{AlreadyRevoked: true, Disconnection: d})
	case errors.Is(err, store.ErrNotFound) && req.ClientID != "":
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: errors.New("this person holds no grant of this application and no consent to it")}
	case errors.Is(err, store.ErrNotFound):
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: errors.New("no such grant of this person")}
	case err != nil:
		return s.WriteUnavailable(w, "revoking the grants", err)
	}
	return writeAdminJSON(w, http.StatusOK, revokeAnswer{Revoked: true, Disconnection: d})
}
