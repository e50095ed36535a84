package sitedocs

import (
	"time"

	"github.com/schoolgate/schoolgate/catalog"
)

// Caps keep llms.txt an index a model reads whole; the MCP server's tools
// reach everything.
const (
	llmsMaxCourses = 200
	llmsMaxOther   = 100
)

// llmsView is what templates/llms.txt shows: the llmstxt.org index of the
// site, its documents and its catalog.
type llmsView struct {
	page
	Summary        string
	OpenAPIVersion string
	// Imported reports that a catalog has been imported.
	Imported                         bool
	Courses, Events, Plans, Products list
}

// renderLLMs writes /llms.txt. Past events are left out.
func renderLLMs(s Site, feed *catalog.Feed, now time.Time) ([]byte, error) {
	v := llmsView{page: newPage(s), OpenAPIVersion: openAPIVersion, Imported: feed != nil}
	if feed != nil {
		v.Summary = mdText(feed.School.Description, 300)
		it := items{s.Issuer}
		events, _ := upcomingEvents(feed, now)
		v.Courses = listOf(feed.Courses, llmsMaxCourses, it.course)
		v.Events = listOf(events, llmsMaxOther, it.event)
		v.Plans = listOf(feed.MembershipPlans, llmsMaxOther, it.plan)
		v.Products = listOf(feed.DigitalProducts, llmsMaxOther, it.product)
	}
	if v.Summary == "" {
		v.Summary = "Course school at " + s.Issuer + ": courses, events, memberships and digital products."
	}
	return render("llms.txt", v)
}
