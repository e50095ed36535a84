package adminapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/school"
	"github.com/schoolgate/schoolgate/store"
)

func (a API) Grants(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return Error{Status: http.StatusMethodNotAllowed, Err: fmt.Errorf("use GET")}
	}
	q := r.URL.Query()
	s, release, err := a.reader(r.Context(), w, q.Get("issuer"))
	if err != nil {
		return err
	}
	defer release()
	clientID, subject := q.Get("client_id"), q.Get("subject")
	if clientID == "" && subject == "" {
		apps, err := s.ConnectedApps(r.Context())
		if err != nil {
			return s.WriteUnavailable(w, "counting the grants", err)
		}
		return school.WriteJSON(w, http.StatusOK, map[string]any{"clients": apps})
	}
	if clientID != "" && subject != "" {
		return BadRequest(`name either the application (client_id) or the person (subject), not both`)
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit >= store.MaxGrantPage {
			return BadRequest(fmt.Sprintf("limit must be a number from 1 to %d", store.MaxGrantPage-1))
		}
	}
	page, err := s.ListGrants(r.Context(), authserver.GrantFilter{ClientID: clientID, Subject: subject,
		Cursor: q.Get("after"), Limit: limit})
	var ie *authserver.InputError
	switch {
	case errors.As(err, &ie):
		return Error{Status: http.StatusBadRequest, Err: ie}
	case err != nil:
		return s.WriteUnavailable(w, "listing the grants", err)
	}
	return school.WriteJSON(w, http.StatusOK, page)
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
func (a API) GrantRevoke(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Issuer   string `json:"issuer"`
		GrantID  string `json:"grant_id"`
		ClientID string `json:"client_id"`
		Subject  string `json:"subject"`
	}
	if err := DecodePost(r, &body); err != nil {
		return err
	}
	req := authserver.DisconnectRequest{GrantID: body.GrantID, ClientID: body.ClientID, Subject: body.Subject}
	if err := req.Check(); err != nil {
		return Error{Status: http.StatusBadRequest, Err: err}
	}
	s, release, err := a.Find(w, body.Issuer)
	if err != nil {
		return err
	}
	defer release()
	d, err := s.Auth().Disconnect(r.Context(), req, authserver.DisconnectedByOperator)
	switch {
	case errors.Is(err, authserver.ErrAlreadyDisconnected):
		return school.WriteJSON(w, http.StatusOK, revokeAnswer{AlreadyRevoked: true, Disconnection: d})
	case errors.Is(err, store.ErrNotFound) && req.ClientID != "":
		return Error{Status: http.StatusNotFound, Err: errors.New("this person holds no grant of this application and no consent to it")}
	case errors.Is(err, store.ErrNotFound):
		return Error{Status: http.StatusNotFound, Err: errors.New("no such grant of this person")}
	case err != nil:
		return s.WriteUnavailable(w, "revoking the grants", err)
	}
	return school.WriteJSON(w, http.StatusOK, revokeAnswer{Revoked: true, Disconnection: d})
}
