package authserver

import "errors"

const settingMCPConnections = "mcp_connections"

// initSettings stores the Caddyfile's initial value of each switch the
// first time a site starts; afterwards the stored value wins, so what an
// operator switched in the admin area survives restarts.
func (s *Server) initSettings() error {
	_, err := s.store.GetSetting(settingMCPConnections)
	if errors.Is(err, ErrNotFound) {
		return s.SetMCPConnections(s.cfg.MCPConnections)
	}
	return err
}

// MCPConnectionsEnabled reports the beta feature switch.
func (s *Server) MCPConnectionsEnabled() bool {
	v, err := s.store.GetSetting(settingMCPConnections)
	return err == nil && string(v) == "on"
}

// SetMCPConnections switches the beta feature.
func (s *Server) SetMCPConnections(on bool) error {
	v := "off"
	if on {
		v = "on"
	}
	return s.store.PutSetting(settingMCPConnections, []byte(v))
}
