package caddymodule

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// defaultLegacyTimeout is how long a request waits for the legacy
// server's answer (budget legacy_timeout) unless the school's budget says
// otherwise: what front proxies commonly wait by default, so that a
// legacy page that takes long (an export, a report) keeps working as it
// did behind one, while a legacy server that never answers holds each
// request's goroutine and connections a minute, not for ever. Past it the
// request is answered 504. It is the response-header timeout of the
// transport: once the header has come, the body may take as long as it
// takes (downloads, streams), and a request body still being sent does
// not count.
const defaultLegacyTimeout = 60 * time.Second

// legacyTimeout is the school's budget legacy_timeout, or the default.
func (g *Gateway) legacyTimeout() time.Duration {
	if g.Budget != nil && g.Budget.LegacyTimeout > 0 {
		return time.Duration(g.Budget.LegacyTimeout)
	}
	return defaultLegacyTimeout
}

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
