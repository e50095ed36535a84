package authserver

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/schoolgate/schoolgate/store"
)

// The consent rule: a remembered consent answers an authorization request
// without asking only when the redirect URI proves which client is asking
// (RFC 8252 §8.6). A client_id is no proof: a public one sits in config
// files and metadata documents for anyone to copy. What proves the client
// is where the code goes. An https redirect URI that an operator
// registered for a vendor or member application, or that a metadata
// document lists on its own host, delivers the code to the client's own
// server. A loopback redirect delivers it to whatever program listens on
// that port of the person's machine, so for those the person is asked
// every time, with what they approved before shown on the page.

// redirectProvesClient reports whether the code of a request for c sent to
// redirectURI can only reach c.
func redirectProvesClient(c *store.Client, redirectURI string) bool {
	u, err := url.Parse(redirectURI)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || !slices.Contains(c.RedirectURIs, redirectURI) {
		return false
	}
	switch c.Kind {
	case store.KindVendor, store.KindApp:
		return true
	case store.KindMetadata:
		doc, err := url.Parse(c.ID)
		return err == nil && strings.EqualFold(u.Hostname(), doc.Hostname())
	}
	// Loopback registrations have no https redirect URIs; any future kind
	// must earn its place here.
	return false
}

// priorConsent is what the person approved for the client before, if
// anything; an error is the store failing.
func (s *Server) priorConsent(ctx context.Context, clientID, subject string) ([]string, error) {
	c, err := s.store.GetConsent(ctx, clientID, subject)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return c.Scopes, nil
}

// coversAll reports whether granted holds every requested scope.
func coversAll(granted, requested []string) bool {
	for _, sc := range requested {
		if !slices.Contains(granted, sc) {
			return false
		}
	}
	return len(granted) > 0
}
