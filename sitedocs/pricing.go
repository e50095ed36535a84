package sitedocs

import (
	"time"

	"github.com/schoolgate/schoolgate/catalog"
)

// pricingMaxEach caps each kind of entry in pricing.md; search_catalog
// reaches the rest.
const pricingMaxEach = 1000

// pricingView is what templates/pricing.md shows: what the site sells.
type pricingView struct {
	page
	// Imported reports that a catalog has been imported; Empty that it
	// lists nothing.
	Imported, Empty                  bool
	Courses, Plans, Events, Products list
	// HasEvents reports that the catalog lists events, upcoming or not;
	// Past is how many have ended and are left out.
	HasEvents bool
	Past      int
}

// renderPricing writes /pricing.md.
func renderPricing(s Site, feed *catalog.Feed, now time.Time) ([]byte, error) {
	v := pricingView{page: newPage(s), Imported: feed != nil}
	if feed != nil {
		it := items{s.Issuer}
		events, past := upcomingEvents(feed, now)
		v.Empty = len(feed.Courses)+len(feed.Events)+len(feed.MembershipPlans)+len(feed.DigitalProducts) == 0
		v.Courses = listOf(feed.Courses, pricingMaxEach, it.course)
		v.Plans = listOf(feed.MembershipPlans, pricingMaxEach, it.plan)
		v.Events = listOf(events, pricingMaxEach, it.event)
		v.Products = listOf(feed.DigitalProducts, pricingMaxEach, it.product)
		v.HasEvents, v.Past = len(feed.Events) > 0, past
	}
	return render("pricing.md", v)
}
