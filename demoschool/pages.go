package demoschool

import (
	"fmt"
	"net/http"
	"time"
)

// The public HTML pages (templates/home.html, course.html, notfound.html).
// The MCP tools link to /courses/<slug>, so those URLs are part of the
// contract; the rest is decoration.
var (
	homePage     = newPage("home.html")
	coursePage   = newPage("course.html")
	notFoundPage = newPage("notfound.html")
)

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
