package sitedocs

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/sitepath"
)

// Caps keep the documents readable for huge catalogs; the MCP server's
// search_catalog tool reaches everything.
const (
	llmsMaxCourses = 200
	llmsMaxOther   = 100
	pricingMaxEach = 1000
	summaryRunes   = 200
	titleRunes     = 200
)

// event is a catalog event with its parsed dates.
type event struct {
	catalog.Event
	start, end time.Time // zero when missing or unparseable
}

func parseWhen(s string) time.Time {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t
	}
	return time.Time{}
}

// upcomingEvents returns the events that have not ended at now, sorted by
// start (undated ones last, feed order otherwise), and how many are past.
// A zero now keeps every event.
func upcomingEvents(feed *catalog.Feed, now time.Time) ([]event, int) {
	var out []event
	past := 0
	for _, e := range feed.Events {
		ev := event{Event: e, start: parseWhen(e.StartsAt), end: parseWhen(e.EndsAt)}
		last := ev.end
		if last.IsZero() {
			last = ev.start
		}
		if !now.IsZero() && !last.IsZero() && last.Before(now) {
			past++
			continue
		}
		out = append(out, ev)
	}
	slices.SortStableFunc(out, func(a, b event) int {
		switch {
		case a.start.IsZero() && b.start.IsZero():
			return 0
		case a.start.IsZero():
			return 1
		case b.start.IsZero():
			return -1
		}
		return a.start.Compare(b.start)
	})
	return out, past
}

func zoneName(t time.Time) string {
	_, off := t.Zone()
	if off == 0 {
		return "UTC"
	}
	return "UTC" + t.Format("-07:00")
}

// when renders an event's dates in the event's own time zone:
// "2026-12-12 14:00–17:00 (UTC+01:00)".
func (e event) when() string {
	if e.start.IsZero() {
		if raw := mdText(e.StartsAt, 40); raw != "" {
			return raw
		}
		return "date not listed"
	}
	const day, clock = "2006-01-02", "15:04"
	start := e.start.Format(day + " " + clock)
	if e.end.IsZero() {
		return start + " (" + zoneName(e.start) + ")"
	}
	_, so := e.start.Zone()
	_, eo := e.end.Zone()
	switch {
	case so != eo:
		return start + " (" + zoneName(e.start) + ") to " + e.end.Format(day+" "+clock) + " (" + zoneName(e.end) + ")"
	case e.start.Format(day) == e.end.Format(day):
		return start + "–" + e.end.Format(clock) + " (" + zoneName(e.start) + ")"
	default:
		return start + " to " + e.end.Format(day+" "+clock) + " (" + zoneName(e.start) + ")"
	}
}

// intervalText is a plan's billing period: "per month", "every 2 months".
func intervalText(interval string) string {
	switch strings.ToLower(cleanText(interval)) {
	case "":
		return ""
	case "day", "daily":
		return "per day"
	case "week", "weekly":
		return "per week"
	case "month", "monthly":
		return "per month"
	case "quarter", "quarterly":
		return "per quarter"
	case "year", "yearly", "annual", "annually":
		return "per year"
	}
	return "every " + mdText(interval, 40)
}

func planPrice(p catalog.MembershipPlan) string {
	pi := priceOf(p.Price)
	if iv := intervalText(p.Interval); iv != "" && pi.known && !pi.free {
		return pi.text + " " + iv
	}
	return pi.text
}

// title is an item's escaped display name, or its slug when it has none.
func title(name, slug string) string {
	if t := mdText(name, titleRunes); t != "" {
		return t
	}
	if t := mdText(slug, titleRunes); t != "" {
		return t
	}
	return "(untitled)"
}

func feedEmpty(f *catalog.Feed) bool {
	return f == nil || len(f.Courses)+len(f.Events)+len(f.MembershipPlans)+len(f.DigitalProducts) == 0
}

// renderLLMs writes /llms.txt in the llmstxt.org format.
func renderLLMs(s Site, feed *catalog.Feed, now time.Time) string {
	u := func(path string) string { return s.Issuer + path }
	var m mdWriter
	m.line("# %s", escapeMarkdown(s.SchoolName))
	m.blank()
	summary := ""
	if feed != nil {
		summary = mdText(feed.School.Description, 300)
	}
	if summary == "" {
		summary = "Course school at " + s.Issuer + ": courses, events, memberships and digital products."
	}
	m.line("> %s", summary)
	m.blank()
	m.line("This site is one school of a course-school platform at %s. Anyone can read the public catalog "+
		"through the MCP server at %s (Streamable HTTP, no sign-in needed). A member's own enrollments, progress, "+
		"orders and event registrations need an OAuth 2.0 member token (Authorization Code with PKCE S256, "+
		"`resource=%s`): see the [authentication guide](%s). Prices are in [pricing.md](%s).",
		s.Issuer, u(sitepath.MCP), s.Issuer, u(sitepath.AuthGuide), u(sitepath.Pricing))
	m.blank()

	m.line("## Docs")
	m.blank()
	m.line("- [OpenAPI](%s): OpenAPI %s description of this origin: OAuth endpoints, the member Account API, "+
		"the MCP endpoint and the operator admin API", u(sitepath.OpenAPI), openAPIVersion)
	m.line("- [Authentication guide](%s): how to get a client_id, authorize with PKCE, exchange, refresh and "+
		"revoke tokens, with this site's URLs", u(sitepath.AuthGuide))
	m.line("- [Pricing](%s): courses, membership plans, events and digital products with prices", u(sitepath.Pricing))
	m.line("- [MCP server](%s): Streamable HTTP; anonymous catalog tools (search_catalog, get_course, "+
		"list_events, list_membership_plans), member tools with a member token", u(sitepath.MCP))
	m.line("- [Protected resource metadata](%s): RFC 9728 discovery of the resource and its scopes",
		u(sitepath.ProtectedResource))
	m.line("- [Authorization server metadata](%s): RFC 8414 discovery of endpoints, grant types and scopes",
		u(sitepath.ASMetadata))
	m.line("- [OpenID Connect discovery](%s)", u(sitepath.OIDCConfig))
	m.blank()

	m.line("## Courses")
	m.blank()
	switch {
	case feed == nil:
		m.line("No catalog has been imported yet.")
	case len(feed.Courses) == 0:
		m.line("The catalog lists no courses.")
	default:
		for i, c := range feed.Courses {
			if i == llmsMaxCourses {
				m.line("- %d more courses are not listed here: search them with the search_catalog tool of the "+
					"[MCP server](%s)", len(feed.Courses)-llmsMaxCourses, u(sitepath.MCP))
				break
			}
			note := mdText(c.Summary, summaryRunes)
			if pi := priceOf(c.Price); pi.known && note != "" {
				note += " (" + pi.text + ")"
			} else if pi.known {
				note = pi.text
			}
			entry := "- " + link(title(c.Title, c.Slug), itemURL(s.Issuer, coursePath, c.Slug, c.Extra))
			if note != "" {
				entry += ": " + note
			}
			m.raw(entry)
		}
	}
	m.blank()

	if feed != nil {
		events, _ := upcomingEvents(feed, now)
		if len(events)+len(feed.MembershipPlans)+len(feed.DigitalProducts) > 0 {
			m.line("## Optional")
			m.blank()
			for i, e := range events {
				if i == llmsMaxOther {
					m.line("- %d more upcoming events: use the list_events tool of the [MCP server](%s)",
						len(events)-llmsMaxOther, u(sitepath.MCP))
					break
				}
				m.line("- %s: event, %s, %s", link(title(e.Title, e.Slug), itemURL(s.Issuer, eventPath, e.Slug, e.Extra)),
					e.when(), priceOf(e.Price).text)
			}
			for i, p := range feed.MembershipPlans {
				if i == llmsMaxOther {
					m.line("- %d more membership plans: use the list_membership_plans tool of the [MCP server](%s)",
						len(feed.MembershipPlans)-llmsMaxOther, u(sitepath.MCP))
					break
				}
				m.line("- %s: membership plan, %s", link(title(p.Name, p.Slug), itemURL(s.Issuer, planPath, p.Slug, p.Extra)),
					planPrice(p))
			}
			for i, d := range feed.DigitalProducts {
				if i == llmsMaxOther {
					m.line("- %d more digital products: search them with the search_catalog tool of the [MCP server](%s)",
						len(feed.DigitalProducts)-llmsMaxOther, u(sitepath.MCP))
					break
				}
				m.line("- %s: digital product, %s", link(title(d.Title, d.Slug), itemURL(s.Issuer, productPath, d.Slug, d.Extra)),
					priceOf(d.Price).text)
			}
			m.blank()
		}
	}
	return strings.TrimRight(m.String(), "\n") + "\n"
}

// renderPricing writes /pricing.md: what the site sells, with prices.
func renderPricing(s Site, feed *catalog.Feed, now time.Time) string {
	var m mdWriter
	m.line("# Pricing at %s", escapeMarkdown(s.SchoolName))
	m.blank()
	if feed == nil {
		m.line("No catalog has been imported yet, so there is nothing to list. See the site itself at <%s>.", s.Issuer)
		return m.String()
	}
	m.line("What <%s> sells, from the school's catalog. Amounts are in the currency shown, in its main unit; "+
		"the checkout on the site is authoritative. The public catalog can also be searched with the "+
		"search_catalog tool of the MCP server at <%s>.", s.Issuer, s.Issuer+sitepath.MCP)
	m.blank()
	if feedEmpty(feed) {
		m.line("The catalog lists nothing for sale.")
		return m.String()
	}
	more := func(n int, what string) {
		if n > pricingMaxEach {
			m.line("- %d more %s are not listed here: search them with the search_catalog tool of the MCP server.",
				n-pricingMaxEach, what)
		}
	}
	if len(feed.Courses) > 0 {
		m.line("## Courses")
		m.blank()
		for _, c := range feed.Courses[:min(len(feed.Courses), pricingMaxEach)] {
			m.line("- %s: %s", link(title(c.Title, c.Slug), itemURL(s.Issuer, coursePath, c.Slug, c.Extra)),
				priceOf(c.Price).text)
		}
		more(len(feed.Courses), "courses")
		m.blank()
	}
	if len(feed.MembershipPlans) > 0 {
		m.line("## Membership plans")
		m.blank()
		for _, p := range feed.MembershipPlans[:min(len(feed.MembershipPlans), pricingMaxEach)] {
			m.line("- %s: %s", link(title(p.Name, p.Slug), itemURL(s.Issuer, planPath, p.Slug, p.Extra)), planPrice(p))
		}
		more(len(feed.MembershipPlans), "membership plans")
		m.blank()
	}
	if len(feed.Events) > 0 {
		events, past := upcomingEvents(feed, now)
		m.line("## Events")
		m.blank()
		for _, e := range events[:min(len(events), pricingMaxEach)] {
			m.line("- %s: %s: %s", link(title(e.Title, e.Slug), itemURL(s.Issuer, eventPath, e.Slug, e.Extra)),
				e.when(), priceOf(e.Price).text)
		}
		more(len(events), "events")
		if len(events) == 0 {
			m.line("No upcoming events.")
		}
		if past > 0 {
			if len(events) > 0 {
				m.blank()
			}
			m.line("%s not listed.", pluralPast(past))
		}
		m.blank()
	}
	if len(feed.DigitalProducts) > 0 {
		m.line("## Digital products")
		m.blank()
		for _, d := range feed.DigitalProducts[:min(len(feed.DigitalProducts), pricingMaxEach)] {
			m.line("- %s: %s", link(title(d.Title, d.Slug), itemURL(s.Issuer, productPath, d.Slug, d.Extra)),
				priceOf(d.Price).text)
		}
		more(len(feed.DigitalProducts), "digital products")
		m.blank()
	}
	return strings.TrimRight(m.String(), "\n") + "\n"
}

func pluralPast(n int) string {
	if n == 1 {
		return "1 past event is"
	}
	return fmt.Sprintf("%d past events are", n)
}
