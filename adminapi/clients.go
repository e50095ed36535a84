package adminapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/school"
	"github.com/schoolgate/schoolgate/store"
)

// The admin area's operations for automation, on Caddy's admin API:
//
//	GET  /schoolgate/mcp-connections?issuer=...   {"enabled": bool}
//	POST /schoolgate/mcp-connections              {"issuer", "enabled"}
//	GET  /schoolgate/clients?issuer=...           the stored clients
//	POST /schoolgate/clients                      {"issuer", "client_name", "redirect_uris",
//	                                               "scopes", "confidential", "idempotency_key"}
//	POST /schoolgate/clients/delete               {"issuer", "client_id"}
//	POST /schoolgate/clients/review               {"issuer", "client_id", "scopes", "reviewed"}

func (a API) MCPConnections(w http.ResponseWriter, r *http.Request) error {
	if r.Method == http.MethodGet {
		s, release, err := a.reader(r.Context(), w, r.URL.Query().Get("issuer"))
		if err != nil {
			return err
		}
		defer release()
		on, err := s.MCPConnectionsEnabled(r.Context())
		if err != nil {
			return s.WriteUnavailable(w, "reading the MCP connections switch", err)
		}
		return school.WriteJSON(w, http.StatusOK, map[string]bool{"enabled": on})
	}
	var body struct {
		Issuer  string `json:"issuer"`
		Enabled *bool  `json:"enabled"`
	}
	if err := DecodePost(r, &body); err != nil {
		return err
	}
	if body.Enabled == nil {
		return Error{Status: http.StatusBadRequest, Err: fmt.Errorf(`send "enabled": true or false`)}
	}
	s, release, err := a.Find(w, body.Issuer)
	if err != nil {
		return err
	}
	defer release()
	if err := s.Auth().SetMCPConnections(r.Context(), *body.Enabled); err != nil {
		return s.WriteUnavailable(w, "saving the MCP connections switch", err)
	}
	return school.WriteJSON(w, http.StatusOK, map[string]bool{"enabled": *body.Enabled})
}

func (a API) Clients(w http.ResponseWriter, r *http.Request) error {
	switch r.Method {
	case http.MethodGet:
		s, release, err := a.reader(r.Context(), w, r.URL.Query().Get("issuer"))
		if err != nil {
			return err
		}
		defer release()
		list, err := s.ListClients(r.Context())
		if err != nil {
			return clientsAPIError(w, s, "listing the clients", err)
		}
		return school.WriteJSON(w, http.StatusOK, list)
	case http.MethodPost:
		return a.createClient(w, r)
	}
	return Error{Status: http.StatusMethodNotAllowed, Err: fmt.Errorf("use GET or POST")}
}

// createClient creates a member application. As in the admin area, this
// needs MCP connections on; the secret of a confidential application is
// in this answer only.
func (a API) createClient(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Issuer string `json:"issuer"`
		authserver.AppSpec
		IdempotencyKey string `json:"idempotency_key"`
	}
	if err := DecodePost(r, &body); err != nil {
		return err
	}
	s, release, err := a.Find(w, body.Issuer)
	if err != nil {
		return err
	}
	defer release()
	switch on, err := s.Auth().MCPConnectionsEnabled(r.Context()); {
	case err != nil:
		// Not the 409 of "off": automation would switch it on, or give up.
		return s.WriteUnavailable(w, "reading the MCP connections switch", err)
	case !on:
		return Error{Status: http.StatusConflict, Err: fmt.Errorf("MCP connections are off at %s: turn them on first", s.Issuer())}
	}
	app, err := s.Auth().CreateApp(r.Context(), body.AppSpec, body.IdempotencyKey)
	if err != nil {
		return clientsAPIError(w, s, "creating the application", err)
	}
	status := http.StatusCreated
	if app.Existing {
		status = http.StatusOK
	}
	w.Header().Set("Cache-Control", "no-store")
	return school.WriteJSON(w, status, app)
}

func (a API) ClientDelete(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Issuer   string `json:"issuer"`
		ClientID string `json:"client_id"`
	}
	if err := DecodePost(r, &body); err != nil {
		return err
	}
	s, release, err := a.Find(w, body.Issuer)
	if err != nil {
		return err
	}
	defer release()
	n, err := s.Auth().DeleteClient(r.Context(), body.ClientID)
	if err != nil {
		return clientsAPIError(w, s, "deleting the client", err)
	}
	return school.WriteJSON(w, http.StatusOK, map[string]any{"deleted": body.ClientID, "grants_revoked": n})
}

func (a API) ClientReview(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Issuer   string   `json:"issuer"`
		ClientID string   `json:"client_id"`
		Scopes   []string `json:"scopes"`
		Reviewed *bool    `json:"reviewed"`
	}
	if err := DecodePost(r, &body); err != nil {
		return err
	}
	if body.Reviewed == nil {
		return Error{Status: http.StatusBadRequest, Err: fmt.Errorf(`send "reviewed": true or false`)}
	}
	s, release, err := a.Find(w, body.Issuer)
	if err != nil {
		return err
	}
	defer release()
	info, err := s.Auth().ReviewClient(r.Context(), body.ClientID, body.Scopes, *body.Reviewed)
	if err != nil {
		return clientsAPIError(w, s, "saving the review", err)
	}
	return school.WriteJSON(w, http.StatusOK, info)
}

// clientsAPIError maps the client operations' errors to statuses; any
// error they do not name is the store failing, answered here.
func clientsAPIError(w http.ResponseWriter, s interface {
	WriteUnavailable(http.ResponseWriter, string, error) error
}, what string, err error) error {
	var ie *authserver.InputError
	switch {
	case errors.As(err, &ie):
		return Error{Status: http.StatusBadRequest, Err: ie}
	case errors.Is(err, store.ErrNotFound):
		return Error{Status: http.StatusNotFound, Err: errors.New("no such client")}
	case errors.Is(err, authserver.ErrWrongKind):
		return Error{Status: http.StatusConflict, Err: err}
	}
	return s.WriteUnavailable(w, what, err)
}
