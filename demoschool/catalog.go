package demoschool

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
)

//go:embed catalog.json
var bundledCatalog []byte

// BundledCatalog returns a copy of the catalog feed compiled into the
// package (catalog.json), which New uses when Options.Catalog is nil.
func BundledCatalog() []byte {
	return append([]byte(nil), bundledCatalog...)
}

// Catalog is the public catalog feed of the legacy backend contract
// (docs/backend-contract.md, item 5). Members the contract does not name
// are kept in Extra and written back out by MarshalJSON.
type Catalog struct {
	School          School                     `json:"school"`
	Courses         []Course                   `json:"courses"`
	Events          []Event                    `json:"events"`
	MembershipPlans []MembershipPlan           `json:"membership_plans"`
	DigitalProducts []DigitalProduct           `json:"digital_products"`
	Extra           map[string]json.RawMessage `json:"-"`
}

// School describes the site.
type School struct {
	Name        string                     `json:"name"`
	Description string                     `json:"description"`
	Extra       map[string]json.RawMessage `json:"-"`
}

// Price is an amount in the currency's main unit (49.00 EUR is 49).
type Price struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// Course is one course of the catalog.
type Course struct {
	Slug      string                     `json:"slug"`
	Title     string                     `json:"title"`
	Summary   string                     `json:"summary"`
	Price     *Price                     `json:"price,omitempty"`
	Lecturers []string                   `json:"lecturers"`
	Tags      []string                   `json:"tags"`
	Extra     map[string]json.RawMessage `json:"-"`
}

// Event is a dated event; StartsAt and EndsAt are RFC 3339 times.
type Event struct {
	Slug     string                     `json:"slug"`
	Title    string                     `json:"title"`
	StartsAt string                     `json:"starts_at"`
	EndsAt   string                     `json:"ends_at"`
	Price    *Price                     `json:"price,omitempty"`
	Extra    map[string]json.RawMessage `json:"-"`
}

// MembershipPlan is a recurring plan; Interval is e.g. "month" or "year".
type MembershipPlan struct {
	Slug     string                     `json:"slug"`
	Name     string                     `json:"name"`
	Price    *Price                     `json:"price,omitempty"`
	Interval string                     `json:"interval"`
	Extra    map[string]json.RawMessage `json:"-"`
}

// DigitalProduct is a downloadable product.
type DigitalProduct struct {
	Slug  string                     `json:"slug"`
	Title string                     `json:"title"`
	Price *Price                     `json:"price,omitempty"`
	Extra map[string]json.RawMessage `json:"-"`
}

// The plain* types have the same fields without the JSON methods, so the
// methods below can encode the known part without recursing into themselves.
type (
	plainCatalog        Catalog
	plainSchool         School
	plainCourse         Course
	plainEvent          Event
	plainMembershipPlan MembershipPlan
	plainDigitalProduct DigitalProduct
)

func (c *Catalog) UnmarshalJSON(b []byte) (err error) {
	c.Extra, err = decodeWithExtra(b, (*plainCatalog)(c))
	return err
}

func (c Catalog) MarshalJSON() ([]byte, error) {
	return encodeWithExtra(plainCatalog(c), c.Extra)
}

func (s *School) UnmarshalJSON(b []byte) (err error) {
	s.Extra, err = decodeWithExtra(b, (*plainSchool)(s))
	return err
}

func (s School) MarshalJSON() ([]byte, error) {
	return encodeWithExtra(plainSchool(s), s.Extra)
}

func (c *Course) UnmarshalJSON(b []byte) (err error) {
	c.Extra, err = decodeWithExtra(b, (*plainCourse)(c))
	return err
}

func (c Course) MarshalJSON() ([]byte, error) {
	return encodeWithExtra(plainCourse(c), c.Extra)
}

func (e *Event) UnmarshalJSON(b []byte) (err error) {
	e.Extra, err = decodeWithExtra(b, (*plainEvent)(e))
	return err
}

func (e Event) MarshalJSON() ([]byte, error) {
	return encodeWithExtra(plainEvent(e), e.Extra)
}

func (p *MembershipPlan) UnmarshalJSON(b []byte) (err error) {
	p.Extra, err = decodeWithExtra(b, (*plainMembershipPlan)(p))
	return err
}

func (p MembershipPlan) MarshalJSON() ([]byte, error) {
	return encodeWithExtra(plainMembershipPlan(p), p.Extra)
}

func (d *DigitalProduct) UnmarshalJSON(b []byte) (err error) {
	d.Extra, err = decodeWithExtra(b, (*plainDigitalProduct)(d))
	return err
}

func (d DigitalProduct) MarshalJSON() ([]byte, error) {
	return encodeWithExtra(plainDigitalProduct(d), d.Extra)
}

// slugPattern keeps slugs safe to put in a URL path and an HTML page
// without escaping surprises.
var slugPattern = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

// ParseCatalog decodes and checks a catalog feed. It rejects what would
// break the pages or the gateway's import: missing names, bad or duplicate
// slugs, negative prices and times that are not RFC 3339.
func ParseCatalog(data []byte) (*Catalog, error) {
	var c Catalog
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return &c, nil
}

func (c *Catalog) validate() error {
	if c.School.Name == "" {
		return errors.New("school.name is empty")
	}
	seen := map[string]bool{}
	check := func(kind, slug, title string, p *Price) error {
		if !slugPattern.MatchString(slug) {
			return fmt.Errorf("%s slug %q is not lower-case words joined by dashes", kind, slug)
		}
		if seen[kind+"/"+slug] {
			return fmt.Errorf("%s slug %q appears twice", kind, slug)
		}
		seen[kind+"/"+slug] = true
		if title == "" {
			return fmt.Errorf("%s %q has no title", kind, slug)
		}
		return p.validate()
	}
	for _, x := range c.Courses {
		if err := check("course", x.Slug, x.Title, x.Price); err != nil {
			return err
		}
	}
	for _, x := range c.Events {
		if err := check("event", x.Slug, x.Title, x.Price); err != nil {
			return err
		}
		if err := checkTimes(x); err != nil {
			return err
		}
	}
	for _, x := range c.MembershipPlans {
		if err := check("membership plan", x.Slug, x.Name, x.Price); err != nil {
			return err
		}
	}
	for _, x := range c.DigitalProducts {
		if err := check("digital product", x.Slug, x.Title, x.Price); err != nil {
			return err
		}
	}
	return nil
}

func (p *Price) validate() error {
	if p == nil {
		return nil
	}
	if p.Amount < 0 {
		return fmt.Errorf("price %v is negative", p.Amount)
	}
	if len(p.Currency) != 3 {
		return fmt.Errorf("currency %q is not an ISO 4217 code", p.Currency)
	}
	return nil
}

func checkTimes(e Event) error {
	start, err := time.Parse(time.RFC3339, e.StartsAt)
	if err != nil {
		return fmt.Errorf("event %q: starts_at: %w", e.Slug, err)
	}
	if e.EndsAt == "" {
		return nil
	}
	end, err := time.Parse(time.RFC3339, e.EndsAt)
	if err != nil {
		return fmt.Errorf("event %q: ends_at: %w", e.Slug, err)
	}
	if end.Before(start) {
		return fmt.Errorf("event %q ends before it starts", e.Slug)
	}
	return nil
}

// course returns the course with the slug, if any.
func (c *Catalog) course(slug string) (Course, bool) {
	for _, x := range c.Courses {
		if x.Slug == slug {
			return x, true
		}
	}
	return Course{}, false
}

// clone returns a copy whose slices can be appended to without touching c;
// the store hands clones to readers so they need no lock while rendering.
func (c *Catalog) clone() *Catalog {
	cp := *c
	cp.Courses = append([]Course(nil), c.Courses...)
	cp.Events = append([]Event(nil), c.Events...)
	cp.MembershipPlans = append([]MembershipPlan(nil), c.MembershipPlans...)
	cp.DigitalProducts = append([]DigitalProduct(nil), c.DigitalProducts...)
	return &cp
}
