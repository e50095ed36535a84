package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/schoolgate/schoolgate/store"
)

// errSessionUnavailable means the legacy site could not say who is signed
// in; the person sees an error page rather than a login loop.
var errSessionUnavailable = errors.New("session lookup failed")

// Session asks the legacy site who the browser is signed in as,
// forwarding only its cookies. It returns nil, nil when nobody is.
func (s *Server) Session(ctx context.Context, r *http.Request) (*store.Identity, error) {
	cookie := r.Header.Get("Cookie")
	if cookie == "" {
		return nil, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.SessionURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errSessionUnavailable, err)
	}
	req.Header.Set("Cookie", cookie)
	req.Header.Set("Accept", "application/json")
	resp, err := s.cfg.SessionClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errSessionUnavailable, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, nil
	default:
		return nil, fmt.Errorf("%w: status %d", errSessionUnavailable, resp.StatusCode)
	}
	var id store.Identity
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&id); err != nil {
		return nil, fmt.Errorf("%w: %v", errSessionUnavailable, err)
	}
	if id.Subject == "" {
		return nil, fmt.Errorf("%w: the session has no sub", errSessionUnavailable)
	}
	return &id, nil
}

// LoginPage is the legacy login page, absolute: the configured URL, a
// path taken relative to the issuer. The pages that need a signed-in
// person send the browser there with return_to.
func (s *Server) LoginPage() string {
	if strings.HasPrefix(s.cfg.LoginURL, "/") {
		return s.url(s.cfg.LoginURL)
	}
	return s.cfg.LoginURL
}
