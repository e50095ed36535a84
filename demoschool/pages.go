package demoschool

import (
	"fmt"
	"net/http"
	"time"
)

// The public HTML pages. The MCP tools link to /courses/<slug>, so those
// URLs are part of the contract; the rest is decoration.

var homePage = newPage("home", `{{define "title"}}Courses{{end}}
{{define "body"}}{{with .Data}}
<p>{{.School.Description}}</p>
<h2>Courses</h2>
<ul>{{range .Courses}}
<li><a href="/courses/{{.Slug}}">{{.Title}}</a> · {{price .Price}}</li>{{end}}
</ul>
<h2>Events</h2>
<ul>{{range .Events}}
<li>{{.Title}} · {{when .StartsAt}} · {{price .Price}}</li>{{end}}
</ul>
<h2>Memberships</h2>
<ul>{{range .MembershipPlans}}
<li>{{.Name}} · {{price .Price}}{{with .Interval}} per {{.}}{{end}}</li>{{end}}
</ul>
<h2>Downloads</h2>
<ul>{{range .DigitalProducts}}
<li>{{.Title}} · {{price .Price}}</li>{{end}}
</ul>
<p class="muted">Machine-readable catalog: <a href="/catalog.json">/catalog.json</a></p>
{{end}}{{end}}
`)

var coursePage = newPage("course", `{{define "title"}}{{.Data.Title}}{{end}}
{{define "body"}}{{with .Data}}
<h2 id="course-title">{{.Title}}</h2>
<p>{{.Summary}}</p>
<p><strong>{{price .Price}}</strong></p>
{{with .Lecturers}}<p>Taught by {{join . ", "}}</p>{{end}}
{{with .Tags}}<p class="muted">Tags: {{join . ", "}}</p>{{end}}
<p><a href="/">All courses</a></p>
{{end}}{{end}}
`)

var notFoundPage = newPage("notfound", `{{define "title"}}Not found{{end}}
{{define "body"}}<h2>Not found</h2><p>There is no such page. <a href="/">See all courses</a>.</p>{{end}}
`)

func formatPrice(p *Price) string {
	switch {
	case p == nil:
		return "price on request"
	case p.Amount == 0:
		return "free"
	}
	return fmt.Sprintf("%.2f %s", p.Amount, p.Currency)
}

func formatWhen(rfc3339 string) string {
	t, err := time.Parse(time.RFC3339, rfc3339)
	if err != nil {
		return rfc3339
	}
	return t.Format("Mon 2 Jan 2006, 15:04 MST")
}

// pageData fills in what the layout needs.
func (s *school) pageData(r *http.Request, data any) pageData {
	return pageData{
		SchoolName: s.catalog.snapshot().School.Name,
		Viewer:     s.users.bySubject(s.sessions.lookup(sessionID(r))),
		Data:       data,
	}
}

func (s *school) home(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		s.notFound(w, r)
		return
	}
	render(w, http.StatusOK, homePage, s.pageData(r, s.catalog.snapshot()))
}

func (s *school) course(w http.ResponseWriter, r *http.Request) {
	c, ok := s.catalog.snapshot().course(r.PathValue("slug"))
	if !ok {
		s.notFound(w, r)
		return
	}
	render(w, http.StatusOK, coursePage, s.pageData(r, c))
}

func (s *school) notFound(w http.ResponseWriter, r *http.Request) {
	render(w, http.StatusNotFound, notFoundPage, s.pageData(r, nil))
}
