package boltstore

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/internal/jsonappend"
	"github.com/schoolgate/schoolgate/store"
)

// Every code exchange and refresh stores an audit event as JSON (what
// the readers, the export and earlier builds read). encoding/json reflects over the
// structs, calls Time's MarshalJSON and checks and compacts what it
// returned: a few percent of an exchange's CPU. These functions write
// the same bytes by hand (the tests compare the two over odd values); a
// string that needs escaping, and a time RFC 3339 cannot hold, go to
// encoding/json itself, so that its rules, and its error, stay its own.

// appendEvent appends e as json.Marshal would.
func appendEvent(b []byte, e *store.AuditEvent) ([]byte, error) {
	if !strictRFC3339(e.Time) {
		raw, err := json.Marshal(e)
		return append(b, raw...), err
	}
	b = append(b, '{')
	if e.ID != "" {
		b = appendJSONField(b, "id", e.ID)
		b = append(b, ',')
	}
	b = appendJSONTime(append(b, `"time":`...), e.Time)
	b = append(b, ',')
	b = appendJSONField(b, "type", e.Type)
	for _, f := range [...]struct{ name, value string }{
		{"sub", e.Subject}, {"client_id", e.ClientID}, {"actor", e.Actor}, {"actor_sub", e.ActorSub},
		{"target", e.Target}, {"outcome", e.Outcome},
	} {
		if f.value != "" {
			b = appendJSONField(append(b, ','), f.name, f.value)
		}
	}
	if e.Grants != 0 {
		b = strconv.AppendInt(append(b, `,"grants":`...), int64(e.Grants), 10)
	}
	for _, f := range [...]struct{ name, value string }{
		{"detail", e.Detail}, {"request_id", e.RequestID}, {"client_ip", e.ClientIP},
	} {
		if f.value != "" {
			b = appendJSONField(append(b, ','), f.name, f.value)
		}
	}
	return append(b, '}'), nil
}

// appendJSONTime appends t as Time's MarshalJSON does, for a t that
// strictRFC3339 takes.
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// eventSize is what e takes unescaped: the names, punctuation and
// time fit in 200 bytes; the rest is the values.
func eventSize(e *store.AuditEvent) int {
	return 200 + len(e.ID) + len(e.Type) + len(e.Subject) + len(e.ClientID) + len(e.Actor) + len(e.ActorSub) +
		len(e.Target) + len(e.Outcome) + len(e.Detail) + len(e.RequestID) + len(e.ClientIP)
}

// strictRFC3339 reports whether Time's MarshalJSON takes t: a year of
// four digits and a zone within a day.
func strictRFC3339(t time.Time) bool {
	_, off := t.Zone()
	return t.Year() >= 0 && t.Year() <= 9999 && off > -24*3600 && off < 24*3600
}

// appendJSONField appends "name":value.
func appendJSONField(b []byte, name, value string) []byte {
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return jsonappend.String(b, value)
}

// decodeCodeJSON reads a code's JSON, as builds before schema version 6
// wrote it, into c as json.Unmarshal would into a zero Code. The fast
// path takes the fields in the order those builds wrote, without white
// space, with strings of printable ASCII and no escapes
// (every string a token flow stores) and times Time.UnmarshalJSON reads;
// it returns what json.Unmarshal would, and gives up on anything else,
// which json.Unmarshal then reads.
func decodeCodeJSON(raw []byte, c *store.Code) error {
	*c = store.Code{}
	if decodeCodeFast(raw, c) {
		return nil
	}
	*c = store.Code{}
	return json.Unmarshal(raw, c)
}

func decodeCodeFast(raw []byte, c *store.Code) bool {
	// One string holds every value: the record is bbolt's memory, valid
	// for the transaction only, and one copy is cheaper than one a field.
	s := scanner{src: string(raw), ok: true}
	r, id := &c.Request, &c.Identity
	s.lit(`{"request":{"client_id":`)
	r.ClientID = s.str()
	s.lit(`,"redirect_uri":`)
	r.RedirectURI = s.str()
	s.lit(`,"scopes":`)
	if !s.skip("null") {
		r.Scopes = s.strs()
	}
	s.lit(`,"resource":`)
	r.Resource = s.str()
	if s.key("state") {
		r.State = s.str()
	}
	if s.key("nonce") {
		r.Nonce = s.str()
	}
	s.lit(`,"code_challenge":`)
	r.CodeChallenge = s.str()
	s.lit(`,"audience":`)
	r.Audience = s.str()
	if s.key("dpop_jkt") {
		r.DPoPJKT = s.str()
	}
	s.lit(`},"identity":{"sub":`)
	id.Subject = s.str()
	if s.key("email") {
		id.Email = s.str()
	}
	if s.key("name") {
		id.Name = s.str()
	}
	if s.key("org_id") {
		id.OrgID = s.str()
	}
	if s.key("roles") {
		id.Roles = s.strs()
	}
	s.lit(`},"auth_time":`)
	c.AuthTime = s.time()
	s.lit(`,"expires_at":`)
	c.ExpiresAt = s.time()
	if s.key("used") {
		s.lit("true")
		c.Used = true
	}
	if s.key("grant_id") {
		c.GrantID = s.str()
	}
	s.lit("}")
	return s.ok && s.src == ""
}

// scanner reads the JSON of one fixed shape from src; ok turns false at
// the first thing that is not that shape, and every read after it is a
// no-op.
type scanner struct {
	src string
	ok  bool
}

// lit reads want.
func (s *scanner) lit(want string) {
	if !s.skip(want) {
		s.ok = false
	}
}

// skip reads want if src starts with it.
func (s *scanner) skip(want string) bool {
	if !s.ok || len(s.src) < len(want) || s.src[:len(want)] != want {
		return false
	}
	s.src = s.src[len(want):]
	return true
}

// key reads ,"name": if it comes next.
func (s *scanner) key(name string) bool {
	if !s.ok || len(s.src) < len(name)+4 || s.src[0] != ',' || s.src[1] != '"' ||
		s.src[2:2+len(name)] != name || s.src[2+len(name)] != '"' || s.src[3+len(name)] != ':' {
		return false
	}
	s.src = s.src[len(name)+4:]
	return true
}

// str reads a string of printable ASCII without escapes.
func (s *scanner) str() string {
	if !s.ok || s.src == "" || s.src[0] != '"' {
		s.ok = false
		return ""
	}
	for i := 1; i < len(s.src); i++ {
		switch c := s.src[i]; {
		case c == '"':
			v := s.src[1:i]
			s.src = s.src[i+1:]
			return v
		case c < 0x20 || c > 0x7e || c == '\\':
			s.ok = false
			return ""
		}
	}
	s.ok = false
	return ""
}

// strs reads an array of str, empty and not nil for [].
func (s *scanner) strs() []string {
	s.lit("[")
	if s.skip("]") {
		return []string{}
	}
	// Sized by the commas before the first ']': one allocation for
	// scopes and roles, whose names hold neither (a capacity only: a
	// value holding either just makes it wrong).
	n := 1
	if end := strings.IndexByte(s.src, ']'); end > 0 {
		n += strings.Count(s.src[:end], ",")
	}
	out := make([]string, 0, n)
	for s.ok {
		out = append(out, s.str())
		if s.skip("]") {
			return out
		}
		s.lit(",")
	}
	return nil
}

// time reads a string as Time.UnmarshalJSON does.
func (s *scanner) time() time.Time {
	var t time.Time
	if !s.ok || s.src == "" || s.src[0] != '"' {
		s.ok = false
		return t
	}
	end := 1
	for end < len(s.src) && s.src[end] != '"' && s.src[end] != '\\' {
		end++
	}
	if end == len(s.src) || s.src[end] != '"' || t.UnmarshalJSON([]byte(s.src[:end+1])) != nil {
		s.ok = false
		return time.Time{}
	}
	s.src = s.src[end+1:]
	return t
}
