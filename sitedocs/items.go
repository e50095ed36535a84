package sitedocs

import (
	"slices"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/catalog"
)

// Lengths at which a catalog's texts are cut.
const (
	summaryRunes = 200
	titleRunes   = 200
)

// item is a catalog entry as the documents list it. Every field is
// Markdown, escaped already: the templates print them as they are.
type item struct {
	// Link is [title](page), or the bare title when there is no page.
	Link string
	// Price is "49.00 EUR", "free" or "price not listed"; a plan's
	// carries its billing period.
	Price string
	// When is an event's dates.
	When string
	// Note is a course's summary, with its price when known.
	Note string
}

// list is the entries of one kind a document shows, and how many more
// the catalog has.
type list struct {
	Items []item
	More  int
}

// listOf shows at most max entries of all.
func listOf[T any](all []T, max int, view func(T) item) list {
	shown := all[:min(len(all), max)]
	l := list{More: len(all) - len(shown)}
	for _, x := range shown {
		l.Items = append(l.Items, view(x))
	}
	return l
}

// items makes catalog entries into items whose pages are on the site.
type items struct{ issuer string }

func (x items) course(c catalog.Course) item {
	price := priceOf(c.Price)
	note := mdText(c.Summary, summaryRunes)
	switch {
	case price.known && note != "":
		note += " (" + price.text + ")"
	case price.known:
		note = price.text
	}
	return item{Link: link(title(c.Title, c.Slug), itemURL(x.issuer, coursePath, c.Slug, c.Extra)),
		Price: price.text, Note: note}
}

func (x items) event(e event) item {
	return item{Link: link(title(e.Title, e.Slug), itemURL(x.issuer, eventPath, e.Slug, e.Extra)),
		Price: priceOf(e.Price).text, When: e.when()}
}

func (x items) plan(p catalog.MembershipPlan) item {
	return item{Link: link(title(p.Name, p.Slug), itemURL(x.issuer, planPath, p.Slug, p.Extra)),
		Price: planPrice(p)}
}

func (x items) product(d catalog.DigitalProduct) item {
	return item{Link: link(title(d.Title, d.Slug), itemURL(x.issuer, productPath, d.Slug, d.Extra)),
		Price: priceOf(d.Price).text}
}

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
