// Package jsonappend writes JSON strings byte for byte as encoding/json
// does, without its reflection, for the few records the token path writes
// by hand (authserver's token response and ID token claims, boltstore's
// audit events and codes). A string that needs escaping is handed to
// encoding/json itself, so that its rules (HTML characters, control
// characters, invalid UTF-8, U+2028) stay its own.
package jsonappend

import "encoding/json"

// String appends s as encoding/json writes a string, HTML escaping on.
func String(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(s)
			if err != nil { // a string always encodes
				panic(err)
			}
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
