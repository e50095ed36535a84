package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
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

// decodeObject fills the struct dst points to from the JSON object raw and
// returns the keys that are not fields of it.
func decodeObject(raw []byte, dst any, fields map[string]int) (map[string]json.RawMessage, error) {
	obj, err := jsonObject(raw)
	if err != nil {
		return nil, err
	}
	v := reflect.ValueOf(dst).Elem()
	var extra map[string]json.RawMessage
	// Sorted keys make the reported error the same on every run.
	for _, key := range sortedKeys(obj) {
		val := obj[key]
		i, known := fields[key]
		if !known {
			if extra == nil {
				extra = make(map[string]json.RawMessage)
			}
			extra[key] = val
			continue
		}
		if err := json.Unmarshal(val, v.Field(i).Addr().Interface()); err != nil {
			return nil, fieldError(key, err)
		}
	}
	return extra, nil
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

// jsonObject decodes raw as a JSON object; null and other values are
// refused because every place the feed has an object requires one.
func jsonObject(raw []byte) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, errors.New("must be a JSON object")
	}
	return obj, nil
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
