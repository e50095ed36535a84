package authserver

import (
	"context"
	"errors"

	"github.com/schoolgate/schoolgate/store"
)

// settingFormKey holds the site's random key that the pages' form tokens
// (CSRF) are derived from; it lives in the store so that every gateway
// instance of the site accepts the forms any of them rendered. Its name
// is the one the admin area first stored it under.
const settingFormKey = "admin_csrf_key"

// FormKey returns the site's key for the pages' form tokens, creating it
// on first use.
func (s *Server) FormKey(ctx context.Context) ([]byte, error) {
	v, err := s.store.GetSetting(ctx, settingFormKey)
	if err == nil && len(v) >= 32 {
		return v, nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if err := s.store.PutSetting(ctx, settingFormKey, []byte(randomString())); err != nil {
		return nil, err
	}
	// Read back: if another instance wrote its key at the same time, the
	// stored one is what both use from now on.
	return s.store.GetSetting(ctx, settingFormKey)
}
