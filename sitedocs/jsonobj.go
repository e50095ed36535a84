package sitedocs

import (
	"bytes"
	"encoding/json"
)

// obj is a JSON object that keeps its keys in the order they were added,
// so the document reads top-down (openapi, info, servers, paths, ...) and
// is byte-for-byte the same for the same site.
type obj []kv

type kv struct {
	k string
	v any
}

// MarshalJSON writes the members in order, without HTML escaping (the
// document is JSON served with nosniff, and "<ACCESS_TOKEN>" should read
// as such).
func (o obj) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(m.k); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		buf.WriteByte(':')
		if err := enc.Encode(m.v); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// with returns o with one more member, for building an object in one
// expression.
func (o obj) with(k string, v any) obj { return append(o, kv{k, v}) }

// add appends a member unless the key is already there (a configured admin
// prefix could collide with a fixed path; the first definition wins).
func (o *obj) add(k string, v any) {
	if _, ok := o.get(k); !ok {
		*o = append(*o, kv{k, v})
	}
}

// get returns a member's value.
func (o obj) get(k string) (any, bool) {
	for _, m := range o {
		if m.k == k {
			return m.v, true
		}
	}
	return nil, false
}

// set replaces a member's value, or appends it.
func (o *obj) set(k string, v any) {
	for i := range *o {
		if (*o)[i].k == k {
			(*o)[i].v = v
			return
		}
	}
	*o = append(*o, kv{k, v})
}
