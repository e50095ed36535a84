package mcpserver

import (
	"encoding/json"
	"maps"
)

// withURL returns a copy of an item's extra fields with "url" set to the
// item's public page. Tools show items with every field the feed had
// (extra fields are how schools publish more than the contract names),
// and the url computed by the catalog wins over a relative or unusable one
// from the feed. The copy leaves the shared catalog untouched.
func withURL(extra map[string]json.RawMessage, url string) map[string]json.RawMessage {
	out := maps.Clone(extra)
	if out == nil {
		out = make(map[string]json.RawMessage, 1)
	}
	out["url"], _ = json.Marshal(url)
	return out
}
