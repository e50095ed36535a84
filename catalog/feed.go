// Package catalog holds a school's public catalog: the feed format of the
// backend contract, its validation, and the in-memory search index that the
// MCP tools and the generated documents read from.
package catalog

import "encoding/json"

// Feed is the catalog feed of the legacy backend contract. Unknown fields of
// every object are kept in Extra so that tools and documents can show them:
// schools put information in their feed that the contract does not name,
// and dropping it would make the gateway less useful than the legacy site.
type Feed struct {
	School School `json:"school"`
	// Language is the BCP 47 tag of the language the catalog is written
	// in ("en", "de", "fr-CH"); search stems words and ignores stop words
	// of that language. Empty means English.
	Language        string                     `json:"language,omitempty"`
	Courses         []Course                   `json:"courses"`
	Events          []Event                    `json:"events"`
	MembershipPlans []MembershipPlan           `json:"membership_plans"`
	DigitalProducts []DigitalProduct           `json:"digital_products"`
	Extra           map[string]json.RawMessage `json:"-"`
}

// School describes the site itself.
type School struct {
	Name        string                     `json:"name"`
	Description string                     `json:"description,omitempty"`
	Extra       map[string]json.RawMessage `json:"-"`
}

// Price is an amount in a currency. Amount is in the currency's main unit
// (e.g. 49.00 EUR), as the feed gives it.
type Price struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// Course is one course of the catalog.
type Course struct {
	Slug      string                     `json:"slug"`
	Title     string                     `json:"title"`
	Summary   string                     `json:"summary,omitempty"`
	Price     *Price                     `json:"price,omitempty"`
	Lecturers []string                   `json:"lecturers,omitempty"`
	Tags      []string                   `json:"tags,omitempty"`
	Extra     map[string]json.RawMessage `json:"-"`
}

// Event is a dated event (webinar, workshop, meetup).
type Event struct {
	Slug     string                     `json:"slug"`
	Title    string                     `json:"title"`
	StartsAt string                     `json:"starts_at"`
	EndsAt   string                     `json:"ends_at,omitempty"`
	Price    *Price                     `json:"price,omitempty"`
	Extra    map[string]json.RawMessage `json:"-"`
}

// MembershipPlan is a recurring plan.
type MembershipPlan struct {
	Slug     string                     `json:"slug"`
	Name     string                     `json:"name"`
	Price    *Price                     `json:"price,omitempty"`
	Interval string                     `json:"interval,omitempty"`
	Extra    map[string]json.RawMessage `json:"-"`
}

// DigitalProduct is a downloadable product.
type DigitalProduct struct {
	Slug  string                     `json:"slug"`
	Title string                     `json:"title"`
	Price *Price                     `json:"price,omitempty"`
	Extra map[string]json.RawMessage `json:"-"`
}
