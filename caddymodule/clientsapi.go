package caddymodule

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/authserver"
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

func handleMCPConnections(w http.ResponseWriter, r *http.Request) error {
	if r.Method == http.MethodGet {
		s, release, err := siteOf(w, r.URL.Query().Get("issuer"))
		if err != nil {
			return err
		}
		defer release()
		on, err := s.Auth().MCPConnectionsEnabled(r.Context())
		if err != nil {
			return s.WriteUnavailable(w, "reading the MCP connections switch", err)
		}
		return writeAdminJSON(w, http.StatusOK, map[string]bool{"enabled": on})
	}
	var body struct {
		Issuer  string `json:"issuer"`
		Enabled *bool  `json:"enabled"`
	}
	if err := decodeAdminPost(r, &body); err != nil {
		return err
	}
	if body.Enabled == nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf(`send "enabled": true or false`)}
	}
	s, release, err := siteOf(w, body.Issuer)
	if err != nil {
		return err
	}
	defer release()
	if err := s.Auth().SetMCPConnections(r.Context(), *body.Enabled); err != nil {
		return s.WriteUnavailable(w, "saving the MCP connections switch", err)
	}
	return writeAdminJSON(w, http.StatusOK, map[string]bool{"enabled": *body.Enabled})
}

func handleClients(w http.ResponseWriter, r *http.Request) error {
	switch r.Method {
	case http.MethodGet:
		s, release, err := siteOf(w, r.URL.Query().Get("issuer"))
		if err != nil {
			return err
		}
		defer release()
		list, err := s.Auth().ListClients(r.Context())
		if err != nil {
			return s.clientsAPIError(w, "listing the clients", err)
		}
		return writeAdminJSON(w, http.StatusOK, list)
	case http.MethodPost:
		return createClient(w, r)
	}
	return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("use GET or POST")}
}

// createClient creates a member application. As in the admin area, this
// needs MCP connections on; the secret of a confidential application is
// in this answer only.
func createClient(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Issuer string `json:"issuer"`
		authserver.AppSpec
		IdempotencyKey string `json:"idempotency_key"`
	}
	if err := decodeAdminPost(r, &body); err != nil {
		return err
	}
	s, release, err := siteOf(w, body.Issuer)
	if err != nil {
		return err
	}
	defer release()
	switch on, err := s.Auth().MCPConnectionsEnabled(r.Context()); {
	case err != nil:
		// Not the 409 of "off": automation would switch it on, or give up.
		return s.WriteUnavailable(w, "reading the MCP connections switch", err)
	case !on:
		return caddy.APIError{HTTPStatus: http.StatusConflict, Err: fmt.Errorf("MCP connections are off at %s: turn them on first", s.Issuer())}
	}
	app, err := s.Auth().CreateApp(r.Context(), body.AppSpec, body.IdempotencyKey)
	if err != nil {
		return s.clientsAPIError(w, "creating the application", err)
	}
	status := http.StatusCreated
	if app.Existing {
		status = http.StatusOK
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeAdminJSON(w, status, app)
}

func handleClientDelete(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Issuer   string `json:"issuer"`
		ClientID string `json:"client_id"`
	}
	if err := decodeAdminPost(r, &body); err != nil {
		return err
	}
	s, release, err := siteOf(w, body.Issuer)
	if err != nil {
		return err
	}
	defer release()
	n, err := s.Auth().DeleteClient(r.Context(), body.ClientID)
	if err != nil {
		return s.clientsAPIError(w, "deleting the client", err)
	}
	return writeAdminJSON(w, http.StatusOK, map[string]any{"deleted": body.ClientID, "grants_revoked": n})
}

func handleClientReview(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Issuer   string   `json:"issuer"`
		ClientID string   `json:"client_id"`
		Scopes   []string `json:"scopes"`
		Reviewed *bool    `json:"reviewed"`
	}
	if err := decodeAdminPost(r, &body); err != nil {
		return err
	}
	if body.Reviewed == nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf(`send "reviewed": true or false`)}
	}
	s, release, err := siteOf(w, body.Issuer)
	if err != nil {
		return err
	}
	defer release()
	info, err := s.Auth().ReviewClient(r.Context(), body.ClientID, body.Scopes, *body.Reviewed)
	if err != nil {
		return s.clientsAPIError(w, "saving the review", err)
	}
	return writeAdminJSON(w, http.StatusOK, info)
}

// clientsAPIError maps the client operations' errors to statuses; any
// error they do not name is the store failing, answered here.
func (s *site) clientsAPIError(w http.ResponseWriter, what string, err error) error {
	var ie *authserver.InputError
	switch {
	case errors.As(err, &ie):
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: ie}
	case errors.Is(err, store.ErrNotFound):
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: errors.New("no such client")}
	case errors.Is(err, authserver.ErrWrongKind):
		return caddy.APIError{HTTPStatus: http.StatusConflict, Err: err}
	}
	return s.WriteUnavailable(w, what, err)
}
