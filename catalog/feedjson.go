package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// The *Fields types have the same fields as the public types but none of
// their methods, so encoding/json handles the known fields without
// recursing into our own MarshalJSON/UnmarshalJSON.
type (
	feedFields    Feed
	schoolFields  School
	courseFields  Course
	eventFields   Event
	planFields    MembershipPlan
	productFields DigitalProduct
)

var (
	feedKeys    = objectFields(reflect.TypeFor[Feed]())
	schoolKeys  = objectFields(reflect.TypeFor[School]())
	courseKeys  = objectFields(reflect.TypeFor[Course]())
	eventKeys   = objectFields(reflect.TypeFor[Event]())
	planKeys    = objectFields(reflect.TypeFor[MembershipPlan]())
	productKeys = objectFields(reflect.TypeFor[DigitalProduct]())
)

// UnmarshalJSON decodes the feed and names the list item in any error, so
// an operator learns which course of thousands is broken.
func (f *Feed) UnmarshalJSON(b []byte) error {
	obj, err := jsonObject(b)
	if err != nil {
		return fmt.Errorf("catalog feed %v", err)
	}
	var out Feed
	for _, key := range sortedKeys(obj) {
		raw := obj[key]
		switch key {
		case "school":
			if err := json.Unmarshal(raw, &out.School); err != nil {
				return fmt.Errorf("school: %v", err)
			}
		case "language":
			if json.Unmarshal(raw, &out.Language) != nil {
				return errors.New("language: expected a string such as \"en\" or \"de\"")
			}
		case "courses":
			err = decodeList(raw, key, &out.Courses)
		case "events":
			err = decodeList(raw, key, &out.Events)
		case "membership_plans":
			err = decodeList(raw, key, &out.MembershipPlans)
		case "digital_products":
			err = decodeList(raw, key, &out.DigitalProducts)
		default:
			if out.Extra == nil {
				out.Extra = make(map[string]json.RawMessage)
			}
			out.Extra[key] = raw
		}
		if err != nil {
			return err
		}
	}
	*f = out
	return nil
}

func decodeList[T any](raw json.RawMessage, name string, dst *[]T) error {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return fmt.Errorf("%s: must be an array", name)
	}
	if items == nil {
		return nil
	}
	out := make([]T, len(items))
	for i, item := range items {
		if err := json.Unmarshal(item, &out[i]); err != nil {
			return fmt.Errorf("%s: %v", itemLabel(name, i, slugOf(item)), err)
		}
	}
	*dst = out
	return nil
}

// slugOf digs the slug out of an item that failed to decode, for the error
// message only.
func slugOf(item json.RawMessage) string {
	var probe struct {
		Slug any `json:"slug"`
	}
	_ = json.Unmarshal(item, &probe)
	s, _ := probe.Slug.(string)
	return s
}

// MarshalJSON writes the feed with its extra top-level keys.
func (f Feed) MarshalJSON() ([]byte, error) {
	return encodeObject(feedFields(f), f.Extra, feedKeys)
}

// UnmarshalJSON keeps unknown keys in Extra.
func (s *School) UnmarshalJSON(b []byte) error {
	var v schoolFields
	extra, err := decodeObject(b, &v, schoolKeys)
	if err != nil {
		return err
	}
	v.Extra = extra
	*s = School(v)
	return nil
}

// MarshalJSON writes the known fields, then Extra.
func (s School) MarshalJSON() ([]byte, error) {
	return encodeObject(schoolFields(s), s.Extra, schoolKeys)
}

// UnmarshalJSON keeps unknown keys in Extra.
func (c *Course) UnmarshalJSON(b []byte) error {
	var v courseFields
	extra, err := decodeObject(b, &v, courseKeys)
	if err != nil {
		return err
	}
	v.Extra = extra
	*c = Course(v)
	return nil
}

// MarshalJSON writes the known fields, then Extra.
func (c Course) MarshalJSON() ([]byte, error) {
	return encodeObject(courseFields(c), c.Extra, courseKeys)
}

// UnmarshalJSON keeps unknown keys in Extra.
func (e *Event) UnmarshalJSON(b []byte) error {
	var v eventFields
	extra, err := decodeObject(b, &v, eventKeys)
	if err != nil {
		return err
	}
	v.Extra = extra
	*e = Event(v)
	return nil
}

// MarshalJSON writes the known fields, then Extra.
func (e Event) MarshalJSON() ([]byte, error) {
	return encodeObject(eventFields(e), e.Extra, eventKeys)
}

// UnmarshalJSON keeps unknown keys in Extra.
func (p *MembershipPlan) UnmarshalJSON(b []byte) error {
	var v planFields
	extra, err := decodeObject(b, &v, planKeys)
	if err != nil {
		return err
	}
	v.Extra = extra
	*p = MembershipPlan(v)
	return nil
}

// MarshalJSON writes the known fields, then Extra.
func (p MembershipPlan) MarshalJSON() ([]byte, error) {
	return encodeObject(planFields(p), p.Extra, planKeys)
}

// UnmarshalJSON keeps unknown keys in Extra.
func (d *DigitalProduct) UnmarshalJSON(b []byte) error {
	var v productFields
	extra, err := decodeObject(b, &v, productKeys)
	if err != nil {
		return err
	}
	v.Extra = extra
	*d = DigitalProduct(v)
	return nil
}

// MarshalJSON writes the known fields, then Extra.
func (d DigitalProduct) MarshalJSON() ([]byte, error) {
	return encodeObject(productFields(d), d.Extra, productKeys)
}
