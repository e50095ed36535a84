package catalog

import (
	"bytes"
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
	if !json.Valid(b) {
		return fmt.Errorf("catalog feed %v", errNotObject)
	}
	var out Feed
	if err := decodeFeed(new(decoder), bytes.TrimSpace(b), &out); err != nil {
		return err
	}
	*f = out
	return nil
}

// decodeFeed decodes the feed obj, which json.Valid has accepted.
func decodeFeed(d *decoder, obj []byte, f *Feed) error {
	if _, err := decodeObject(d, obj, f, &feedObject); err != nil {
		if err == errNotObject {
			return fmt.Errorf("catalog feed %v", err)
		}
		return err
	}
	return nil
}

var feedObject = object[Feed]{
	fields: []field[Feed]{
		{"courses", func(d *decoder, f *Feed, raw []byte) error {
			return decodeList(d, raw, "courses", &f.Courses, &courseObject)
		}},
		{"digital_products", func(d *decoder, f *Feed, raw []byte) error {
			return decodeList(d, raw, "digital_products", &f.DigitalProducts, &productObject)
		}},
		{"events", func(d *decoder, f *Feed, raw []byte) error {
			return decodeList(d, raw, "events", &f.Events, &eventObject)
		}},
		{"language", func(d *decoder, f *Feed, raw []byte) error {
			if decodeString(d, raw, &f.Language) != nil {
				return errors.New("language: expected a string such as \"en\" or \"de\"")
			}
			return nil
		}},
		{"membership_plans", func(d *decoder, f *Feed, raw []byte) error {
			return decodeList(d, raw, "membership_plans", &f.MembershipPlans, &planObject)
		}},
		{"school", func(d *decoder, f *Feed, raw []byte) error {
			if err := decodeItem(d, raw, &f.School, &schoolObject); err != nil {
				return fmt.Errorf("school: %v", err)
			}
			return nil
		}},
	},
	extra: func(f *Feed) *map[string]json.RawMessage { return &f.Extra },
}

// decodeList decodes a list of the feed; null leaves it nil.
func decodeList[T any](d *decoder, raw []byte, name string, dst *[]T, o *object[T]) error {
	if string(raw) == "null" {
		return nil
	}
	if raw[0] != '[' {
		return fmt.Errorf("%s: must be an array", name)
	}
	out := make([]T, arrayLen(raw))
	var err error
	i := 0
	arrayItems(raw, func(item []byte) bool {
		if e := decodeItem(d, item, &out[i], o); e != nil {
			err = fmt.Errorf("%s: %v", itemLabel(name, i, slugOf(item)), e)
			return false
		}
		i++
		return true
	})
	if err != nil {
		return err
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
	return unmarshalObject(b, s, &schoolObject)
}

// MarshalJSON writes the known fields, then Extra.
func (s School) MarshalJSON() ([]byte, error) {
	return encodeObject(schoolFields(s), s.Extra, schoolKeys)
}

// UnmarshalJSON keeps unknown keys in Extra.
func (c *Course) UnmarshalJSON(b []byte) error {
	return unmarshalObject(b, c, &courseObject)
}

// MarshalJSON writes the known fields, then Extra.
func (c Course) MarshalJSON() ([]byte, error) {
	return encodeObject(courseFields(c), c.Extra, courseKeys)
}

// UnmarshalJSON keeps unknown keys in Extra.
func (e *Event) UnmarshalJSON(b []byte) error {
	return unmarshalObject(b, e, &eventObject)
}

// MarshalJSON writes the known fields, then Extra.
func (e Event) MarshalJSON() ([]byte, error) {
	return encodeObject(eventFields(e), e.Extra, eventKeys)
}

// UnmarshalJSON keeps unknown keys in Extra.
func (p *MembershipPlan) UnmarshalJSON(b []byte) error {
	return unmarshalObject(b, p, &planObject)
}

// MarshalJSON writes the known fields, then Extra.
func (p MembershipPlan) MarshalJSON() ([]byte, error) {
	return encodeObject(planFields(p), p.Extra, planKeys)
}

// UnmarshalJSON keeps unknown keys in Extra.
func (d *DigitalProduct) UnmarshalJSON(b []byte) error {
	return unmarshalObject(b, d, &productObject)
}

// MarshalJSON writes the known fields, then Extra.
func (d DigitalProduct) MarshalJSON() ([]byte, error) {
	return encodeObject(productFields(d), d.Extra, productKeys)
}

var schoolObject = object[School]{
	fields: []field[School]{
		{"description", func(d *decoder, s *School, raw []byte) error { return decodeString(d, raw, &s.Description) }},
		{"name", func(d *decoder, s *School, raw []byte) error { return decodeString(d, raw, &s.Name) }},
	},
	extra: func(s *School) *map[string]json.RawMessage { return &s.Extra },
}

var courseObject = object[Course]{
	fields: []field[Course]{
		{"lecturers", func(d *decoder, c *Course, raw []byte) error { return decodeStrings(d, raw, &c.Lecturers) }},
		{"price", func(d *decoder, c *Course, raw []byte) error { return decodePrice(d, raw, &c.Price) }},
		{"slug", func(d *decoder, c *Course, raw []byte) error { return decodeString(d, raw, &c.Slug) }},
		{"summary", func(d *decoder, c *Course, raw []byte) error { return decodeString(d, raw, &c.Summary) }},
		{"tags", func(d *decoder, c *Course, raw []byte) error { return decodeStrings(d, raw, &c.Tags) }},
		{"title", func(d *decoder, c *Course, raw []byte) error { return decodeString(d, raw, &c.Title) }},
	},
	extra: func(c *Course) *map[string]json.RawMessage { return &c.Extra },
}

var eventObject = object[Event]{
	fields: []field[Event]{
		{"ends_at", func(d *decoder, e *Event, raw []byte) error { return decodeString(d, raw, &e.EndsAt) }},
		{"price", func(d *decoder, e *Event, raw []byte) error { return decodePrice(d, raw, &e.Price) }},
		{"slug", func(d *decoder, e *Event, raw []byte) error { return decodeString(d, raw, &e.Slug) }},
		{"starts_at", func(d *decoder, e *Event, raw []byte) error { return decodeString(d, raw, &e.StartsAt) }},
		{"title", func(d *decoder, e *Event, raw []byte) error { return decodeString(d, raw, &e.Title) }},
	},
	extra: func(e *Event) *map[string]json.RawMessage { return &e.Extra },
}

var planObject = object[MembershipPlan]{
	fields: []field[MembershipPlan]{
		{"interval", func(d *decoder, p *MembershipPlan, raw []byte) error { return decodeString(d, raw, &p.Interval) }},
		{"name", func(d *decoder, p *MembershipPlan, raw []byte) error { return decodeString(d, raw, &p.Name) }},
		{"price", func(d *decoder, p *MembershipPlan, raw []byte) error { return decodePrice(d, raw, &p.Price) }},
		{"slug", func(d *decoder, p *MembershipPlan, raw []byte) error { return decodeString(d, raw, &p.Slug) }},
	},
	extra: func(p *MembershipPlan) *map[string]json.RawMessage { return &p.Extra },
}

var productObject = object[DigitalProduct]{
	fields: []field[DigitalProduct]{
		{"price", func(d *decoder, p *DigitalProduct, raw []byte) error { return decodePrice(d, raw, &p.Price) }},
		{"slug", func(d *decoder, p *DigitalProduct, raw []byte) error { return decodeString(d, raw, &p.Slug) }},
		{"title", func(d *decoder, p *DigitalProduct, raw []byte) error { return decodeString(d, raw, &p.Title) }},
	},
	extra: func(p *DigitalProduct) *map[string]json.RawMessage { return &p.Extra },
}
