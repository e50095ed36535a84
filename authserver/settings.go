package authserver

import (
	"context"
	"errors"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/store"
)

const settingMCPConnections = "mcp_connections"

// initialSettings are the switches' values a site's first start stores.
func (c *Config) initialSettings() map[string][]byte {
	settings := map[string][]byte{settingMCPConnections: []byte(onOff(c.MCPConnections))}
	if c.DPoPNonce && c.DPoP != policy.DPoPOff {
		settings[settingDPoPNonceKey] = newNonceKey()
	}
	return settings
}

// initSettings stores the Caddyfile's initial value of each switch the
// first time a site starts; afterwards the stored value wins, so what an
// operator switched in the admin area survives restarts.
func (s *Server) initSettings(ctx context.Context) error {
	// The switch is stored once, on first start; later starts only read
	// it, so that starting a school writes nothing.
	_, err := s.store.GetSetting(ctx, settingMCPConnections)
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	_, err = s.store.InitSetting(ctx, settingMCPConnections, []byte(onOff(s.cfg.MCPConnections)))
	return err
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// MCPConnectionsEnabled reports the beta feature switch. An error is the
// store failing and means neither on nor off: callers answer 503, since
// "off" would refuse member applications that are allowed.
func (s Reads) MCPConnectionsEnabled(ctx context.Context) (bool, error) {
	v, err := s.store.GetSetting(ctx, settingMCPConnections)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return string(v) == "on", nil
}

// SetMCPConnections switches the beta feature. Switching it off also
// revokes every grant of the member applications, so none of them keeps
// access through tokens issued before: off means disconnected. The
// applications themselves are kept for when it is switched on again.
func (s *Server) SetMCPConnections(ctx context.Context, on bool) error {
	v := []byte(onOff(on))
	ctx = s.record(ctx, store.AuditEvent{Type: store.EventMCPConnections, Detail: onOff(on)})
	if on {
		return s.store.PutSetting(ctx, settingMCPConnections, v)
	}
	defer s.cache.purge()
	_, err := s.store.PutSettingRevoking(ctx, settingMCPConnections, v, store.KindApp)
	return err
}

// CheckStore reads from the store, for health checks: nil when the
// site's data can be read.
func (s *Server) CheckStore(ctx context.Context) error {
	_, err := s.store.GetSetting(ctx, settingMCPConnections)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// StoredUsage is the school's usage as the store holds it: what every
// instance has added (store.Usage), not what this one counted and has not
// stored yet.
func (s *Server) StoredUsage(ctx context.Context) (*store.Usage, error) {
	return s.store.LoadUsage(ctx)
}
