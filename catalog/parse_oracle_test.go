package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// oldParse is Parse as it was before the single-pass decoder: a
// json.Unmarshal per level into maps of raw messages, then one per field.
// It is the oracle the equivalence tests and FuzzParse compare Parse with.
func oldParse(raw []byte) (*Feed, error) {
	if len(raw) > MaxFeedBytes {
		return nil, fmt.Errorf("catalog feed is %d bytes, more than the limit of %d", len(raw), MaxFeedBytes)
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return nil, errors.New("catalog feed is empty")
	}
	if trimmed[0] != '{' {
		return nil, errors.New("catalog feed must be a JSON object")
	}
	var top json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, describeJSONError(raw, err)
	}
	f, err := oldFeed(top)
	if err != nil {
		return nil, describeJSONError(raw, err)
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f, nil
}

func oldFeed(b []byte) (*Feed, error) {
	obj, err := oldJSONObject(b)
	if err != nil {
		return nil, fmt.Errorf("catalog feed %v", err)
	}
	var out Feed
	for _, key := range sortedKeys(obj) {
		raw := obj[key]
		switch key {
		case "school":
			var v schoolFields
			v.Extra, err = oldDecodeObject(raw, &v, schoolKeys)
			if err != nil {
				return nil, fmt.Errorf("school: %v", err)
			}
			out.School = School(v)
		case "language":
			if json.Unmarshal(raw, &out.Language) != nil {
				return nil, errors.New("language: expected a string such as \"en\" or \"de\"")
			}
		case "courses":
			err = oldDecodeList(raw, key, &out.Courses, courseKeys, func(v *courseFields) Course { return Course(*v) })
		case "events":
			err = oldDecodeList(raw, key, &out.Events, eventKeys, func(v *eventFields) Event { return Event(*v) })
		case "membership_plans":
			err = oldDecodeList(raw, key, &out.MembershipPlans, planKeys, func(v *planFields) MembershipPlan { return MembershipPlan(*v) })
		case "digital_products":
			err = oldDecodeList(raw, key, &out.DigitalProducts, productKeys, func(v *productFields) DigitalProduct { return DigitalProduct(*v) })
		default:
			if out.Extra == nil {
				out.Extra = make(map[string]json.RawMessage)
			}
			out.Extra[key] = raw
		}
		if err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// oldDecodeList decodes each item into its *Fields type F, whose Extra
// oldDecodeObject fills, and converts it to T.
func oldDecodeList[T, F any](raw json.RawMessage, name string, dst *[]T, keys map[string]int, conv func(*F) T) error {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return fmt.Errorf("%s: must be an array", name)
	}
	if items == nil {
		return nil
	}
	out := make([]T, len(items))
	for i, item := range items {
		var v F
		extra, err := oldDecodeObject(item, &v, keys)
		if err != nil {
			return fmt.Errorf("%s: %v", itemLabel(name, i, slugOf(item)), err)
		}
		reflect.ValueOf(&v).Elem().FieldByName("Extra").Set(reflect.ValueOf(extra))
		out[i] = conv(&v)
	}
	*dst = out
	return nil
}

func oldDecodeObject(raw []byte, dst any, fields map[string]int) (map[string]json.RawMessage, error) {
	obj, err := oldJSONObject(raw)
	if err != nil {
		return nil, err
	}
	v := reflect.ValueOf(dst).Elem()
	var extra map[string]json.RawMessage
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

func oldJSONObject(raw []byte) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, errors.New("must be a JSON object")
	}
	return obj, nil
}
