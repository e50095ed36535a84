package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/authserver"
)

func init() {
	caddy.RegisterModule(grantsAPI{})
}

// grantsAPI adds the connected applications of each school to Caddy's
// admin API (local and origin-checked by Caddy), as the admin area shows
// them:
//
//	GET  /schoolgate/grants?issuer=...                      every application people are connected to, with its count
//	GET  /schoolgate/grants?issuer=...&client_id=...        the people connected to one application, a page at a time
//	GET  /schoolgate/grants?issuer=...&subject=...          the applications one person connected
//	     (&after=<next of the previous page>&limit=<1-499, default 50>)
//	POST /schoolgate/grants/revoke                          {"issuer", "grant_id", "subject"}: end one person's grant
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
		{Pattern: "/schoolgate/grants", Handler: caddy.AdminHandlerFunc(handleGrants)},
		{Pattern: "/schoolgate/grants/revoke", Handler: caddy.AdminHandlerFunc(handleGrantRevoke)},
	}
}

var _ caddy.AdminRouter = grantsAPI{}

func handleGrants(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("use GET")}
	}
	q := r.URL.Query()
	s, err := siteOf(q.Get("issuer"))
	if err != nil {
		return err
	}
	clientID, subject := q.Get("client_id"), q.Get("subject")
	if clientID == "" && subject == "" {
		apps, err := s.as.ConnectedApps(r.Context())
		if err != nil {
			return s.writeUnavailable(w, "counting the grants", err)
		}
		return writeAdminJSON(w, http.StatusOK, map[string]any{"clients": apps})
	}
	if clientID != "" && subject != "" {
		return badRequest(`name either the application (client_id) or the person (subject), not both`)
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit >= authserver.MaxGrantPage {
			return badRequest(fmt.Sprintf("limit must be a number from 1 to %d", authserver.MaxGrantPage-1))
		}
	}
	page, err := s.as.ListGrants(r.Context(), authserver.GrantFilter{ClientID: clientID, Subject: subject,
		Cursor: q.Get("after"), Limit: limit})
	var ie *authserver.InputError
	switch {
	case errors.As(err, &ie):
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: ie}
	case err != nil:
		return s.writeUnavailable(w, "listing the grants", err)
	}
	return writeAdminJSON(w, http.StatusOK, page)
}

// handleGrantRevoke ends one person's grant and forgets their consent to
// its client, as the Disconnect button of the admin area does. The grant
// is named with its person, as the list gives both, so that a mistyped id
// never ends someone else's.
func handleGrantRevoke(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Issuer  string `json:"issuer"`
		GrantID string `json:"grant_id"`
		Subject string `json:"subject"`
	}
	if err := decodeAdminPost(r, &body); err != nil {
		return err
	}
	if body.GrantID == "" || body.Subject == "" {
		return badRequest(`name the grant and its person: "grant_id" and "subject", as GET /schoolgate/grants lists them`)
	}
	s, err := siteOf(body.Issuer)
	if err != nil {
		return err
	}
	info, err := s.as.DisconnectGrant(r.Context(), body.GrantID, body.Subject, authserver.DisconnectedByOperator)
	switch {
	case errors.Is(err, authserver.ErrAlreadyDisconnected):
		return writeAdminJSON(w, http.StatusOK, map[string]any{"revoked": false, "already_revoked": true, "grant": info})
	case errors.Is(err, authserver.ErrNotFound):
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: errors.New("no such grant of this person")}
	case err != nil:
		return s.writeUnavailable(w, "revoking the grant", err)
	}
	return writeAdminJSON(w, http.StatusOK, map[string]any{"revoked": true, "grant": info})
}
