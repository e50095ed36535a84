package catalog

import (
	"fmt"
	"math"
	"strings"
	"time"

	"golang.org/x/text/language"
)

// maxProblems bounds the report: an operator needs the first few to see
// the pattern, and a 10,000-item feed with a systematic mistake must not
// produce a megabyte of log line.
const maxProblems = 20

// maxSlugLen keeps slugs usable as URL path segments and map keys.
const maxSlugLen = 200

// ValidationError lists what is wrong with a feed, each problem naming the
// item, e.g. `courses[3] "foo": duplicate slug`.
type ValidationError struct {
	Problems []string
	// More counts problems found beyond those listed.
	More int
}

func (e *ValidationError) Error() string {
	msg := "invalid catalog feed: " + strings.Join(e.Problems, "; ")
	if e.More > 0 {
		msg += fmt.Sprintf("; and %d more", e.More)
	}
	return msg
}

type problems struct{ err ValidationError }

func (p *problems) add(item, format string, args ...any) {
	if len(p.err.Problems) >= maxProblems {
		p.err.More++
		return
	}
	msg := fmt.Sprintf(format, args...)
	if item != "" {
		msg = item + ": " + msg
	}
	p.err.Problems = append(p.err.Problems, msg)
}

// Validate checks the rules every consumer of the catalog relies on:
// names to show, slugs that are unique and safe in a URL, prices that are
// real amounts in a real currency code, and event dates that parse.
func (f *Feed) Validate() error {
	var p problems
	if strings.TrimSpace(f.School.Name) == "" {
		p.add("", "school.name is required")
	}
	if f.Language != "" {
		if _, err := language.Parse(f.Language); err != nil {
			p.add("", "language %q is not a BCP 47 language tag such as \"en\", \"de\" or \"fr-CH\"", clip(f.Language))
		}
	}
	slugs := newSlugSet(&p, "courses")
	for i, c := range f.Courses {
		item := itemLabel("courses", i, c.Slug)
		slugs.check(item, i, c.Slug)
		requireText(&p, item, "title", c.Title)
		checkPrice(&p, item, c.Price)
	}
	slugs = newSlugSet(&p, "events")
	for i, e := range f.Events {
		item := itemLabel("events", i, e.Slug)
		slugs.check(item, i, e.Slug)
		requireText(&p, item, "title", e.Title)
		checkPrice(&p, item, e.Price)
		checkEventTimes(&p, item, e)
	}
	slugs = newSlugSet(&p, "membership_plans")
	for i, m := range f.MembershipPlans {
		item := itemLabel("membership_plans", i, m.Slug)
		slugs.check(item, i, m.Slug)
		requireText(&p, item, "name", m.Name)
		checkPrice(&p, item, m.Price)
	}
	slugs = newSlugSet(&p, "digital_products")
	for i, d := range f.DigitalProducts {
		item := itemLabel("digital_products", i, d.Slug)
		slugs.check(item, i, d.Slug)
		requireText(&p, item, "title", d.Title)
		checkPrice(&p, item, d.Price)
	}
	if len(p.err.Problems) == 0 {
		return nil
	}
	return &p.err
}

func itemLabel(list string, i int, slug string) string {
	if slug == "" || len(slug) > maxSlugLen {
		return fmt.Sprintf("%s[%d]", list, i)
	}
	return fmt.Sprintf("%s[%d] %q", list, i, slug)
}

type slugSet struct {
	p    *problems
	list string
	seen map[string]int
}

func newSlugSet(p *problems, list string) *slugSet {
	return &slugSet{p: p, list: list, seen: make(map[string]int)}
}

func (s *slugSet) check(item string, i int, slug string) {
	switch {
	case slug == "":
		s.p.add(item, "slug is required")
	case !ValidSlug(slug):
		s.p.add(item, "slug %q is not URL-safe (letters, digits, '-', '_' and '.', starting with a letter or digit, at most %d characters)", clip(slug), maxSlugLen)
	default:
		if first, dup := s.seen[slug]; dup {
			s.p.add(item, "duplicate slug (also %s[%d])", s.list, first)
			return
		}
		s.seen[slug] = i
	}
}

// ValidSlug reports whether s can be a catalog slug: it must be usable as
// one URL path segment without escaping.
func ValidSlug(s string) bool {
	if s == "" || len(s) > maxSlugLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '-' && c != '_' && c != '.') {
			return false
		}
	}
	return true
}

func requireText(p *problems, item, field, v string) {
	if strings.TrimSpace(v) == "" {
		p.add(item, "%s is required", field)
	}
}

func checkPrice(p *problems, item string, pr *Price) {
	if pr == nil {
		return
	}
	if math.IsNaN(pr.Amount) || math.IsInf(pr.Amount, 0) || pr.Amount < 0 {
		p.add(item, "price.amount must be a finite number >= 0")
	}
	if !validCurrency(pr.Currency) {
		p.add(item, "price.currency %q must be a 3-letter uppercase ISO 4217 code such as EUR", clip(pr.Currency))
	}
}

func validCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	for i := range 3 {
		if c[i] < 'A' || c[i] > 'Z' {
			return false
		}
	}
	return true
}

func checkEventTimes(p *problems, item string, e Event) {
	if e.StartsAt == "" {
		p.add(item, "starts_at is required (RFC 3339, e.g. 2027-03-13T10:00:00+01:00)")
		return
	}
	start, err := time.Parse(time.RFC3339, e.StartsAt)
	if err != nil {
		p.add(item, "starts_at %q is not an RFC 3339 date-time", clip(e.StartsAt))
		return
	}
	if e.EndsAt == "" {
		return
	}
	end, err := time.Parse(time.RFC3339, e.EndsAt)
	switch {
	case err != nil:
		p.add(item, "ends_at %q is not an RFC 3339 date-time", clip(e.EndsAt))
	case end.Before(start):
		p.add(item, "ends_at is before starts_at")
	}
}

// clip keeps hostile or accidental megabyte values out of error messages.
func clip(s string) string {
	const n = 60
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
