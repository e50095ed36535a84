package caddymodule

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// withLegacyTimeout gives a proxy's transport the legacy timeout where
// its configuration sets none: an http transport's
// response_header_timeout, a fastcgi transport's read_timeout (which
// bounds each read, the first answer included). Without one, a legacy
// server that accepts and never answers would hold the request as long
// as its client waits. A timeout the operator wrote is kept; another
// transport is left as it is.
func withLegacyTimeout(transport json.RawMessage, d time.Duration) (json.RawMessage, error) {
	var t map[string]any
	if err := json.Unmarshal(transport, &t); err != nil {
		return nil, fmt.Errorf("transport: %v", err)
	}
	key := map[string]string{"http": "response_header_timeout", "fastcgi": "read_timeout"}[fmt.Sprint(t["protocol"])]
	if _, set := t[key]; key == "" || set {
		return transport, nil
	}
	t[key] = caddy.Duration(d)
	return json.Marshal(t)
}
