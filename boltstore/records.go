package boltstore

// The binary form of the records the token endpoint reads and writes on
// every exchange and refresh, tokens, grants and codes: encoding/json was
// a tenth of its CPU. A record starts with a format byte JSON never starts
// with, then its fields in order: strings as a uvarint length and their
// bytes, a slice as its count (Scopes as count+1, 0 for nil, since JSON
// keeps a nil and an empty one apart; Roles, omitted when empty in JSON, as
// its count, 0 read as nil), a time as a flag (0: the zero time) then its
// Unix seconds (varint) and nanoseconds (uvarint), read in UTC, and a bool
// as one byte. A record starting with '{' is one written as JSON by an
// earlier build and is read as such (a code, as anything not starting
// with its format byte); every write is binary. A token's
// JKT (its DPoP binding) comes last: a binary token record that ends
// before it was written by a build that knew no DPoP, and is unbound.

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

// Format bytes, one per record type, so that a record read as the wrong
// type is an error.
const (
	formatToken byte = 0x01
	formatGrant byte = 0x02
	formatCode  byte = 0x03
)

var errBadRecord = errors.New("malformed record")

// appendToken appends t's binary form to b.
func appendToken(b []byte, t *store.Token) []byte {
	b = append(b, formatToken)
	b = appendString(b, t.Kind)
	b = appendString(b, t.GrantID)
	b = appendString(b, t.ClientID)
	b = appendNilable(b, t.Scopes)
	b = appendTime(b, t.IssuedAt)
	b = appendTime(b, t.ExpiresAt)
	b = appendTime(b, t.RotatedAt)
	b = appendBool(b, t.Revoked)
	return appendString(b, t.JKT)
}

// appendGrant appends g's binary form to b.
func appendGrant(b []byte, g *store.Grant) []byte {
	b = append(b, formatGrant)
	b = appendString(b, g.ID)
	b = appendString(b, g.ClientID)
	b = appendString(b, g.Audience)
	b = appendNilable(b, g.Scopes)
	b = appendString(b, g.Resource)
	b = appendIdentity(b, &g.Identity)
	b = appendTime(b, g.AuthTime)
	b = appendTime(b, g.CreatedAt)
	b = appendTime(b, g.RefreshedAt)
	return appendBool(b, g.Revoked)
}

// appendCode appends c's binary form to b.
func appendCode(b []byte, c *store.Code) []byte {
	r := &c.Request
	b = append(b, formatCode)
	b = appendString(b, r.ClientID)
	b = appendString(b, r.RedirectURI)
	b = appendNilable(b, r.Scopes)
	b = appendString(b, r.Resource)
	b = appendString(b, r.State)
	b = appendString(b, r.Nonce)
	b = appendString(b, r.CodeChallenge)
	b = appendString(b, r.Audience)
	b = appendString(b, r.DPoPJKT)
	b = appendIdentity(b, &c.Identity)
	b = appendTime(b, c.AuthTime)
	b = appendTime(b, c.ExpiresAt)
	b = appendBool(b, c.Used)
	return appendString(b, c.GrantID)
}

// decodeCode reads a code record into c: binary, or the JSON of a build
// before schema version 6 (decodeCodeJSON), which is anything that does
// not start with formatCode.
func decodeCode(raw []byte, c *store.Code) error {
	if len(raw) == 0 || raw[0] != formatCode {
		return decodeCodeJSON(raw, c)
	}
	*c = store.Code{}
	r, err := newReader(raw, formatCode)
	if err != nil {
		return err
	}
	q := &c.Request
	q.ClientID = r.string()
	q.RedirectURI = r.string()
	q.Scopes = r.nilable()
	q.Resource = r.string()
	q.State = r.string()
	q.Nonce = r.string()
	q.CodeChallenge = r.string()
	q.Audience = r.string()
	q.DPoPJKT = r.string()
	r.identity(&c.Identity)
	c.AuthTime = r.time()
	c.ExpiresAt = r.time()
	c.Used = r.bool()
	c.GrantID = r.string()
	return r.end("code")
}

// decodeToken reads a token record, binary or JSON, into a zeroed t.
func decodeToken(raw []byte, t *store.Token) error {
	*t = store.Token{}
	if len(raw) > 0 && raw[0] == '{' {
		return json.Unmarshal(raw, t)
	}
	r, err := newReader(raw, formatToken)
	if err != nil {
		return err
	}
	t.Kind = r.string()
	t.GrantID = r.string()
	t.ClientID = r.string()
	t.Scopes = r.nilable()
	t.IssuedAt = r.time()
	t.ExpiresAt = r.time()
	t.RotatedAt = r.time()
	t.Revoked = r.bool()
	if r.more() {
		t.JKT = r.string()
	}
	return r.end("token")
}

// decodeGrant reads a grant record, binary or JSON, into a zeroed g.
func decodeGrant(raw []byte, g *store.Grant) error {
	*g = store.Grant{}
	if len(raw) > 0 && raw[0] == '{' {
		return json.Unmarshal(raw, g)
	}
	r, err := newReader(raw, formatGrant)
	if err != nil {
		return err
	}
	g.ID = r.string()
	g.ClientID = r.string()
	g.Audience = r.string()
	g.Scopes = r.nilable()
	g.Resource = r.string()
	r.identity(&g.Identity)
	g.AuthTime = r.time()
	g.CreatedAt = r.time()
	g.RefreshedAt = r.time()
	g.Revoked = r.bool()
	return r.end("grant")
}

// getToken, putToken, getGrant and putGrant are getJSON and putJSON for
// the tokens and grants buckets.

func getToken(b *bolt.Bucket, key string, t *store.Token) error {
	return getRecord(b, key, t, decodeToken)
}

func putToken(b *bolt.Bucket, key string, t *store.Token) error {
	k, v := keyAndValue(key, tokenSize(t))
	return b.Put(k, appendToken(v, t))
}

func getGrant(b *bolt.Bucket, key string, g *store.Grant) error {
	return getRecord(b, key, g, decodeGrant)
}

func putGrant(b *bolt.Bucket, key string, g *store.Grant) error {
	k, v := keyAndValue(key, grantSize(g))
	return b.Put(k, appendGrant(v, g))
}

// keyAndValue returns key as bytes and an empty value of capacity size
// cut from one allocation: a hot write puts a few records, and bbolt
// keeps each value, never its key, until the commit. The key's capacity
// ends where the value starts.
func keyAndValue(key string, size int) (k, v []byte) {
	buf := make([]byte, len(key), len(key)+size)
	copy(buf, key)
	return buf[:len(key):len(key)], buf[len(key):len(key)]
}

// getCode reads the code under key into c.
func getCode(b *bolt.Bucket, key string, c *store.Code) error {
	return getRecord(b, key, c, decodeCode)
}

// getRecord reads the record under key into v with decode;
// store.ErrNotFound when there is none.
func getRecord[T any](b *bolt.Bucket, key string, v *T, decode func([]byte, *T) error) error {
	raw := b.Get([]byte(key))
	if raw == nil {
		return store.ErrNotFound
	}
	return decode(raw, v)
}

// putCode stores c under key.
func putCode(b *bolt.Bucket, key string, c *store.Code) error {
	k, v := keyAndValue(key, codeSize(c))
	return b.Put(k, appendCode(v, c))
}

// maxTime is the most a time takes: its flag, seconds and nanoseconds.
const maxTime = 1 + binary.MaxVarintLen64 + binary.MaxVarintLen32

// tokenSize and grantSize bound the length of a record's binary form, so
// that it is made in one allocation.
func tokenSize(t *store.Token) int {
	return 1 + 5*binary.MaxVarintLen64 + len(t.Kind) + len(t.GrantID) + len(t.ClientID) +
		stringsSize(t.Scopes) + 3*maxTime + 1 + len(t.JKT)
}

func grantSize(g *store.Grant) int {
	return 1 + 5*binary.MaxVarintLen64 + len(g.ID) + len(g.ClientID) + len(g.Audience) +
		stringsSize(g.Scopes) + len(g.Resource) + identitySize(&g.Identity) + 3*maxTime + 1
}

func codeSize(c *store.Code) int {
	r := &c.Request
	return 1 + 10*binary.MaxVarintLen64 + len(r.ClientID) + len(r.RedirectURI) + stringsSize(r.Scopes) +
		len(r.Resource) + len(r.State) + len(r.Nonce) + len(r.CodeChallenge) + len(r.Audience) + len(r.DPoPJKT) +
		identitySize(&c.Identity) + 2*maxTime + 1 + len(c.GrantID)
}

// appendIdentity, identitySize and reader.identity are the person a
// grant and a code carry, in the same form in both records.
func appendIdentity(b []byte, id *store.Identity) []byte {
	b = appendString(b, id.Subject)
	b = appendString(b, id.Email)
	b = appendString(b, id.Name)
	b = appendString(b, id.OrgID)
	return appendStrings(b, id.Roles)
}

func identitySize(id *store.Identity) int {
	return 5*binary.MaxVarintLen64 + len(id.Subject) + len(id.Email) + len(id.Name) + len(id.OrgID) +
		stringsSize(id.Roles)
}

func stringsSize(ss []string) int {
	n := 0
	for _, s := range ss {
		n += binary.MaxVarintLen64 + len(s)
	}
	return n
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

// appendNilable writes a nil slice as 0 and any other as its count + 1.
func appendNilable(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(ss))+1)
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	b = append(b, 1)
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// reader reads a record's fields in order. The record is copied into one
// string that every field's string is cut from (one allocation instead
// of one per field). The first malformed field sets err, and every read
// after it returns a zero value.
type reader struct {
	s   string
	err error
}

func newReader(raw []byte, format byte) (reader, error) {
	if len(raw) == 0 || raw[0] != format {
		return reader{}, fmt.Errorf("%w: unknown format", errBadRecord)
	}
	return reader{s: string(raw[1:])}, nil
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = errBadRecord
	}
	r.s = ""
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	var v uint64
	for i := 0; i < len(r.s) && i < binary.MaxVarintLen64; i++ {
		c := r.s[i]
		if i == binary.MaxVarintLen64-1 && c > 1 {
			break // overflows 64 bits
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			r.s = r.s[i+1:]
			return v
		}
	}
	r.fail()
	return 0
}

func (r *reader) varint() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.s) == 0 {
		r.fail()
		return 0
	}
	c := r.s[0]
	r.s = r.s[1:]
	return c
}

func (r *reader) string() string {
	n := r.uvarint()
	if n > uint64(len(r.s)) {
		r.fail()
		return ""
	}
	s := r.s[:n]
	r.s = r.s[n:]
	return s
}

// count reads a slice's length, which cannot exceed the bytes left: each
// string takes at least one.
func (r *reader) count(n uint64) []string {
	if n > uint64(len(r.s)) {
		r.fail()
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.string()
	}
	return ss
}

func (r *reader) strings() []string {
	n := r.uvarint()
	if n == 0 {
		return nil
	}
	return r.count(n)
}

func (r *reader) nilable() []string {
	n := r.uvarint()
	if n == 0 {
		return nil
	}
	return r.count(n - 1)
}

func (r *reader) time() time.Time {
	switch r.byte() {
	case 0:
		return time.Time{}
	case 1:
	default:
		r.fail()
		return time.Time{}
	}
	sec, nsec := r.varint(), r.uvarint()
	if r.err != nil || nsec >= 1e9 {
		r.fail()
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

func (r *reader) bool() bool {
	switch r.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	r.fail()
	return false
}

// more reports whether fields are left to read: a field added to the end
// of a record is absent from records written before it.
func (r *reader) more() bool { return r.err == nil && len(r.s) > 0 }

// end reports the first malformed field, or bytes left over.
func (r *reader) end(what string) error {
	if r.err == nil && len(r.s) > 0 {
		r.err = errBadRecord
	}
	if r.err != nil {
		return fmt.Errorf("decoding %s: %w", what, r.err)
	}
	return nil
}

func (r *reader) identity(id *store.Identity) {
	id.Subject = r.string()
	id.Email = r.string()
	id.Name = r.string()
	id.OrgID = r.string()
	id.Roles = r.strings()
}
