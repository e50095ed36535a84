package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// objectFields maps the exact JSON names of a struct's fields to their
// index. encoding/json matches keys case-insensitively, which would let
// "Title" fill Title and also land in Extra; matching exactly keeps every
// key in exactly one place.
func objectFields(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		m[name] = i
	}
	return m
}

// decoder is the scratch of one decoding: the members of the objects
// being decoded, innermost last.
type decoder struct {
	members []member
}

// object says how to decode a type: its fields, sorted by name so that the
// error reported is the same on every run, and where its extra keys go.
type object[T any] struct {
	fields []field[T]
	extra  func(*T) *map[string]json.RawMessage
}

type field[T any] struct {
	name   string
	decode func(d *decoder, v *T, raw []byte) error
}

var errNotObject = errors.New("must be a JSON object")

// decodeObject fills v from the JSON object obj: each field from the last
// member of its exact name, as a map of the object would hold it, and the
// other members into Extra. On an error it returns the field's name.
func decodeObject[T any](d *decoder, obj []byte, v *T, o *object[T]) (string, error) {
	start := len(d.members)
	all, ok := appendMembers(d.members, obj)
	if !ok {
		return "", errNotObject
	}
	members := all[start:]
	d.members = all
	var last [8]int // 1 + index in members of each field's last member
	var extra map[string]json.RawMessage
	for j, m := range members {
		if i := fieldIndex(o.fields, m.key); i >= 0 {
			last[i] = j + 1
			continue
		}
		if extra == nil {
			extra = make(map[string]json.RawMessage)
		}
		extra[string(m.key)] = bytes.Clone(m.val)
	}
	*o.extra(v) = extra
	for i, f := range o.fields {
		if last[i] == 0 {
			continue
		}
		if err := f.decode(d, v, members[last[i]-1].val); err != nil {
			d.members = d.members[:start]
			return f.name, err
		}
	}
	d.members = d.members[:start]
	return "", nil
}

func fieldIndex[T any](fields []field[T], key []byte) int {
	for i, f := range fields {
		if f.name == string(key) {
			return i
		}
	}
	return -1
}

// decodeItem decodes one object of the feed and words its error as
// decodeObject always has.
func decodeItem[T any](d *decoder, obj []byte, v *T, o *object[T]) error {
	name, err := decodeObject(d, obj, v, o)
	if err != nil && name != "" {
		return fieldError(name, err)
	}
	return err
}

// unmarshalObject is UnmarshalJSON for the types of the feed: b may come
// from anywhere, so it is checked first.
func unmarshalObject[T any](b []byte, v *T, o *object[T]) error {
	if !json.Valid(b) {
		return errNotObject
	}
	var out T
	if err := decodeItem(new(decoder), bytes.TrimSpace(b), &out, o); err != nil {
		return err
	}
	*v = out
	return nil
}

// The decoders of the fields take what a generated feed holds themselves;
// anything else (escapes, nulls, wrong types) they leave to encoding/json,
// which decodes and refuses it as it always has.

func decodeString(_ *decoder, raw []byte, dst *string) error {
	if s, ok := plainString(raw); ok {
		*dst = string(s)
		return nil
	}
	return json.Unmarshal(raw, dst)
}

func decodeStrings(_ *decoder, raw []byte, dst *[]string) error {
	if raw[0] == '[' {
		n, plain := 0, true
		arrayItems(raw, func(item []byte) bool {
			_, plain = plainString(item)
			n++
			return plain
		})
		if plain {
			out := make([]string, 0, n)
			arrayItems(raw, func(item []byte) bool {
				s, _ := plainString(item)
				out = append(out, string(s))
				return true
			})
			*dst = out
			return nil
		}
	}
	return json.Unmarshal(raw, dst)
}

func decodePrice(_ *decoder, raw []byte, dst **Price) error {
	if p, ok := plainPrice(raw); ok {
		*dst = p
		return nil
	}
	return json.Unmarshal(raw, dst)
}

// plainPrice decodes a price whose members are an amount that is a number
// in range and a currency that is a plain string, each at most once.
func plainPrice(raw []byte) (*Price, bool) {
	var buf [2]member
	members, ok := appendMembers(buf[:0], raw)
	if !ok {
		return nil, false
	}
	var p Price
	var haveAmount, haveCurrency bool
	for _, m := range members {
		switch string(m.key) {
		case "amount":
			if haveAmount || m.val[0] != '-' && (m.val[0] < '0' || m.val[0] > '9') {
				return nil, false
			}
			f, err := strconv.ParseFloat(string(m.val), 64)
			if err != nil {
				return nil, false
			}
			p.Amount, haveAmount = f, true
		case "currency":
			s, ok := plainString(m.val)
			if haveCurrency || !ok {
				return nil, false
			}
			p.Currency, haveCurrency = string(s), true
		default:
			return nil, false
		}
	}
	return &p, true
}

// encodeObject writes known as a JSON object followed by the extra keys in
// sorted order. Extra keys that shadow a field are skipped: the typed value
// is the one the gateway validated.
func encodeObject(known any, extra map[string]json.RawMessage, fields map[string]int) ([]byte, error) {
	b, err := json.Marshal(known)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	buf := bytes.NewBuffer(b[:len(b)-1])
	for _, key := range sortedKeys(extra) {
		if _, shadowed := fields[key]; shadowed {
			continue
		}
		val := extra[key]
		if len(val) == 0 {
			val = json.RawMessage("null")
		} else if !json.Valid(val) {
			return nil, fmt.Errorf("extra field %q is not valid JSON", key)
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(val)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fieldError turns encoding/json's Go-flavoured type errors into messages
// an operator fixing a feed can act on.
func fieldError(key string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		path := key
		if te.Field != "" {
			path += "." + te.Field
		}
		if strings.HasPrefix(te.Value, "number ") && jsonKind(te.Type) == "a number" {
			return fmt.Errorf("%s: %s is out of range", path, te.Value)
		}
		return fmt.Errorf("%s: expected %s, got %s", path, jsonKind(te.Type), te.Value)
	}
	return fmt.Errorf("%s: %v", key, err)
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int64, reflect.Int32:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}
