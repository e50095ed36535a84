package authserver

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/schoolgate/schoolgate/internal/jsonappend"
)

// Every code exchange encodes a token response and an ID token's claims,
// and every refresh a token response: encoding/json reflects over the
// struct, allocates an encoder and copies its output each time. These
// two fixed shapes are written by hand instead, byte for byte what
// encoding/json writes for them (the tests compare the two over odd
// values): the same field order, the same omitempty, and any string that
// needs escaping handed to encoding/json itself, so that its escaping
// rules (HTML characters, control characters, invalid UTF-8, U+2028)
// stay its own. Tokens, scopes and the issuer never need it.

// appendJSONField appends ,"name":value for a string, the comma unless
// first.
func appendJSONField(b []byte, name, value string, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return jsonappend.String(b, value)
}

// appendJSONInt appends ,"name":n.
func appendJSONInt(b []byte, name string, n int64) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, n, 10)
}

// appendJSON appends t as json.Marshal would.
func (t *tokenResponse) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = appendJSONField(b, "access_token", t.AccessToken, true)
	b = appendJSONField(b, "token_type", t.TokenType, false)
	b = appendJSONInt(b, "expires_in", t.ExpiresIn)
	b = appendJSONField(b, "scope", t.Scope, false)
	if t.RefreshToken != "" {
		b = appendJSONField(b, "refresh_token", t.RefreshToken, false)
	}
	if t.IDToken != "" {
		b = appendJSONField(b, "id_token", t.IDToken, false)
	}
	return append(b, '}')
}

// appendJSON appends c as json.Marshal would.
func (c *idTokenClaims) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = appendJSONField(b, "iss", c.Issuer, true)
	b = appendJSONField(b, "sub", c.Subject, false)
	if c.Email != "" {
		b = appendJSONField(b, "email", c.Email, false)
	}
	if c.Name != "" {
		b = appendJSONField(b, "name", c.Name, false)
	}
	if c.OrgID != "" {
		b = appendJSONField(b, "org_id", c.OrgID, false)
	}
	b = append(b, `,"roles":`...)
	if c.Roles == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, r := range c.Roles {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonappend.String(b, r)
		}
		b = append(b, ']')
	}
	b = appendJSONField(b, "aud", c.Audience, false)
	b = appendJSONInt(b, "iat", c.IssuedAt)
	b = appendJSONInt(b, "exp", c.Expires)
	b = appendJSONInt(b, "auth_time", c.AuthTime)
	if c.Nonce != "" {
		b = appendJSONField(b, "nonce", c.Nonce, false)
	}
	return append(b, '}')
}

// jsonBuffers are the buffers answers and claims are written into before
// they are sent or signed; one holds an answer with an ID token.
var jsonBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// maxPooledJSON bounds what goes back to jsonBuffers: a rare huge answer
// is left to the collector rather than kept.
const maxPooledJSON = 16 << 10

func getJSONBuffer() *[]byte { return jsonBuffers.Get().(*[]byte) }

func putJSONBuffer(b *[]byte) {
	if cap(*b) <= maxPooledJSON {
		*b = (*b)[:0]
		jsonBuffers.Put(b)
	}
}

// writeTokenResponse is writeJSON for a token response: the same headers
// and the same bytes (with encoding/json's Encoder's final newline).
func writeTokenResponse(w http.ResponseWriter, resp *tokenResponse) {
	setJSONHeaders(w)
	w.WriteHeader(http.StatusOK)
	buf := getJSONBuffer()
	*buf = append(resp.appendJSON(*buf), '\n')
	_, _ = w.Write(*buf)
	putJSONBuffer(buf)
}
