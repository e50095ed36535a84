package demoschool

import (
	"fmt"
	"slices"
	"sync"
)

// enrollment is a member's access to one course.
type enrollment struct {
	Slug               string
	ExpireDate         *string // YYYY-MM-DD; nil with lifetime access
	HasLifetimeAccess  bool
	LastWatchedLecture *lecturePosition // nil before the first lecture
}

// lecturePosition is where a member stopped watching.
type lecturePosition struct {
	LectureID       string
	PositionSeconds int
}

// order is something a member bought. Total is in the currency's main unit.
type order struct {
	ID        string
	Total     float64
	Currency  string
	CreatedAt string   // RFC 3339
	Items     []string // catalog slugs; shown by the admin API only
}

// eventRegistration is a member's seat at a catalog event.
type eventRegistration struct {
	EventSlug    string
	RegisteredAt string // RFC 3339
}

// account is everything the account API shows about one member.
type account struct {
	Enrollments        []enrollment
	Orders             []order
	EventRegistrations []eventRegistration
}

func date(s string) *string { return &s }

// seedAccounts gives the members data that exercises every field: lifetime
// and dated access, an expired course, a course never started, orders and
// event registrations. The slugs exist in the bundled catalog.
func seedAccounts() map[string]*account {
	return map[string]*account{
		"member-1": {
			Enrollments: []enrollment{
				{Slug: "photography-fundamentals", HasLifetimeAccess: true,
					LastWatchedLecture: &lecturePosition{LectureID: "pf-03-exposure-triangle", PositionSeconds: 754}},
				{Slug: "portrait-photography", ExpireDate: date("2027-06-30"),
					LastWatchedLecture: &lecturePosition{LectureID: "pp-01-welcome", PositionSeconds: 120}},
				{Slug: "editing-in-lightroom", ExpireDate: date("2026-10-31")},
				{Slug: "smartphone-photography", HasLifetimeAccess: true,
					LastWatchedLecture: &lecturePosition{LectureID: "sp-05-quick-edits", PositionSeconds: 42}},
			},
			Orders: []order{
				{ID: "ord-1001", Total: 49, Currency: "EUR", CreatedAt: "2026-02-03T09:15:00Z", Items: []string{"photography-fundamentals"}},
				{ID: "ord-1002", Total: 158, Currency: "EUR", CreatedAt: "2026-06-30T18:40:00Z", Items: []string{"portrait-photography", "editing-in-lightroom"}},
				{ID: "ord-1003", Total: 25, Currency: "EUR", CreatedAt: "2026-11-02T12:00:00Z", Items: []string{"winter-light-photo-walk"}},
			},
			EventRegistrations: []eventRegistration{
				{EventSlug: "winter-light-photo-walk", RegisteredAt: "2026-11-02T12:00:00Z"},
				{EventSlug: "year-in-review-webinar", RegisteredAt: "2026-11-10T20:05:00Z"},
			},
		},
		"member-2": {
			Enrollments: []enrollment{
				{Slug: "landscape-photography", ExpireDate: date("2027-03-31"),
					LastWatchedLecture: &lecturePosition{LectureID: "lp-02-composition", PositionSeconds: 300}},
			},
			Orders: []order{
				{ID: "ord-2001", Total: 89, Currency: "EUR", CreatedAt: "2026-03-31T10:00:00Z", Items: []string{"landscape-photography"}},
			},
		},
	}
}

// accountStore holds the members' mutable data.
type accountStore struct {
	mu       sync.RWMutex
	accounts map[string]*account
}

func newAccountStore() *accountStore {
	return &accountStore{accounts: seedAccounts()}
}

// get returns a deep copy of sub's account (empty for a person with none),
// so callers can read it without holding the lock.
func (s *accountStore) get(sub string) account {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, ok := s.accounts[sub]
	if !ok {
		return account{}
	}
	return a.clone()
}

// all returns deep copies of every account, keyed by subject.
func (s *accountStore) all() map[string]account {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]account, len(s.accounts))
	for sub, a := range s.accounts {
		out[sub] = a.clone()
	}
	return out
}

// errNotEnrolled is returned for a course the member has no access to.
type errNotEnrolled struct{ slug string }

func (e errNotEnrolled) Error() string {
	return fmt.Sprintf("you are not enrolled in the course %q", e.slug)
}

// setPosition records where sub stopped in a course.
func (s *accountStore) setPosition(sub, slug string, p lecturePosition) (lecturePosition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[sub]
	if !ok {
		return lecturePosition{}, errNotEnrolled{slug}
	}
	i := slices.IndexFunc(a.Enrollments, func(e enrollment) bool { return e.Slug == slug })
	if i < 0 {
		return lecturePosition{}, errNotEnrolled{slug}
	}
	a.Enrollments[i].LastWatchedLecture = &p
	return p, nil
}

func (a *account) clone() account {
	c := account{
		Enrollments:        slices.Clone(a.Enrollments),
		Orders:             slices.Clone(a.Orders),
		EventRegistrations: slices.Clone(a.EventRegistrations),
	}
	for i, e := range c.Enrollments {
		if e.ExpireDate != nil {
			c.Enrollments[i].ExpireDate = date(*e.ExpireDate)
		}
		if e.LastWatchedLecture != nil {
			p := *e.LastWatchedLecture
			c.Enrollments[i].LastWatchedLecture = &p
		}
	}
	for i, o := range c.Orders {
		c.Orders[i].Items = slices.Clone(o.Items)
	}
	return c
}
