package demoschool

import (
	_ "embed"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// AdminPrefix is where the admin API lives; the gateway's admin_prefix
// must match it.
const AdminPrefix = "/admin/api/"

// adminHandlers maps methods to handlers for one admin path.
type adminHandlers map[string]func(w http.ResponseWriter, r *http.Request, id string)

// admin serves the operator API. It trusts the gateway's X-School-* headers
// but still refuses anything that does not claim the operator audience, so
// a member token that slipped past a misconfigured gateway reads nothing.
// Scopes are deliberately not checked here: enforcing them is the gateway's
// job, and a second check would hide a gateway that forgot to.
func (s *school) admin(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	if r.Header.Get("X-School-Audience") != "operator" {
		writeError(w, http.StatusForbidden, "forbidden", "the admin API is for operators (X-School-Audience: operator)")
		return
	}
	area, id := adminRoute(r)
	routes := s.adminRoutes(area, id != "")
	if routes == nil {
		writeError(w, http.StatusNotFound, "not_found", "no admin API at "+r.URL.Path)
		return
	}
	h, ok := routes[r.Method]
	if !ok {
		methods := make([]string, 0, len(routes))
		for m := range routes {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		w.Header().Set("Allow", strings.Join(methods, ", "))
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not supported here")
		return
	}
	h(w, r, id)
}

func (s *school) adminRoutes(area string, withID bool) adminHandlers {
	switch {
	case area == "courses" && !withID:
		return adminHandlers{"GET": s.adminListCourses, "POST": s.adminCreateCourse}
	case area == "courses":
		return adminHandlers{"GET": s.adminGetCourse}
	case area == "students" && !withID:
		return adminHandlers{"GET": s.adminListStudents}
	case area == "students":
		return adminHandlers{"GET": s.adminGetStudent}
	case area == "orders" && !withID:
		return adminHandlers{"GET": s.adminListOrders}
	case area == "events" && !withID:
		return adminHandlers{"GET": s.adminListEvents}
	case area == "school" && !withID:
		return adminHandlers{"GET": s.adminGetSchool, "PATCH": s.adminUpdateSchool}
	}
	return nil
}

func (s *school) adminListCourses(w http.ResponseWriter, _ *http.Request, _ string) {
	writeJSON(w, http.StatusOK, map[string]any{"courses": s.catalog.snapshot().Courses})
}

func (s *school) adminGetCourse(w http.ResponseWriter, _ *http.Request, slug string) {
	c, ok := s.catalog.snapshot().course(slug)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no course "+slug)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// adminCreateCourse adds a course to the live catalog, so it also shows up
// in /catalog.json and, after the gateway's next catalog refresh, in MCP.
func (s *school) adminCreateCourse(w http.ResponseWriter, r *http.Request, _ string) {
	var c Course
	if !decodeBody(w, r, &c) {
		return
	}
	if c.Lecturers == nil {
		c.Lecturers = []string{}
	}
	if c.Tags == nil {
		c.Tags = []string{}
	}
	if err := s.catalog.addCourse(c); err != nil {
		status := http.StatusBadRequest
		var conflict errConflict
		if errors.As(err, &conflict) {
			status = http.StatusConflict
		}
		writeError(w, status, "invalid_course", err.Error())
		return
	}
	w.Header().Set("Location", AdminPrefix+"courses/"+c.Slug)
	writeJSON(w, http.StatusCreated, c)
}

type adminStudent struct {
	ID              string   `json:"id"`
	Email           string   `json:"email"`
	Name            string   `json:"name"`
	EnrolledCourses []string `json:"enrolled_courses"`
}

type adminStudentDetail struct {
	adminStudent
	Roles              []string                 `json:"roles"`
	Enrollments        []adminEnrollment        `json:"enrollments"`
	Orders             []adminOrder             `json:"orders"`
	EventRegistrations []adminEventRegistration `json:"event_registrations"`
}

type adminEnrollment struct {
	Slug               string        `json:"slug"`
	ExpireDate         *string       `json:"expire_date"`
	HasLifetimeAccess  bool          `json:"has_lifetime_access"`
	LastWatchedLecture *adminLecture `json:"last_watched_lecture"`
}

type adminLecture struct {
	LectureID       string `json:"lecture_id"`
	PositionSeconds int    `json:"position_seconds"`
}

type adminOrder struct {
	ID        string   `json:"id"`
	MemberID  string   `json:"member_id"`
	Total     float64  `json:"total"`
	Currency  string   `json:"currency"`
	CreatedAt string   `json:"created_at"`
	Items     []string `json:"items"`
}

type adminEventRegistration struct {
	EventSlug    string `json:"event_slug"`
	RegisteredAt string `json:"registered_at"`
}

// students returns the people with the student role, in subject order so
// listings are stable.
func (s *school) students() []*User {
	var out []*User
	for _, u := range s.users.bySub {
		if slices.Contains(u.Roles, "student") {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b *User) int { return strings.Compare(a.Sub, b.Sub) })
	return out
}

func studentSummary(u *User, a account) adminStudent {
	st := adminStudent{ID: u.Sub, Email: u.Email, Name: u.Name, EnrolledCourses: []string{}}
	for _, e := range a.Enrollments {
		st.EnrolledCourses = append(st.EnrolledCourses, e.Slug)
	}
	return st
}

func (s *school) adminListStudents(w http.ResponseWriter, _ *http.Request, _ string) {
	list := []adminStudent{}
	for _, u := range s.students() {
		list = append(list, studentSummary(u, s.accounts.get(u.Sub)))
	}
	writeJSON(w, http.StatusOK, map[string]any{"students": list})
}

func (s *school) adminGetStudent(w http.ResponseWriter, _ *http.Request, id string) {
	u := s.users.bySubject(id)
	if u == nil || !slices.Contains(u.Roles, "student") {
		writeError(w, http.StatusNotFound, "not_found", "no student "+id)
		return
	}
	a := s.accounts.get(u.Sub)
	d := adminStudentDetail{
		adminStudent:       studentSummary(u, a),
		Roles:              u.Roles,
		Enrollments:        []adminEnrollment{},
		Orders:             adminOrders(u.Sub, a),
		EventRegistrations: []adminEventRegistration{},
	}
	for _, e := range a.Enrollments {
		ae := adminEnrollment{Slug: e.Slug, ExpireDate: e.ExpireDate, HasLifetimeAccess: e.HasLifetimeAccess}
		if p := e.LastWatchedLecture; p != nil {
			ae.LastWatchedLecture = &adminLecture{p.LectureID, p.PositionSeconds}
		}
		d.Enrollments = append(d.Enrollments, ae)
	}
	for _, r := range a.EventRegistrations {
		d.EventRegistrations = append(d.EventRegistrations, adminEventRegistration(r))
	}
	writeJSON(w, http.StatusOK, d)
}

func adminOrders(sub string, a account) []adminOrder {
	out := []adminOrder{}
	for _, o := range a.Orders {
		out = append(out, adminOrder{ID: o.ID, MemberID: sub, Total: o.Total, Currency: o.Currency, CreatedAt: o.CreatedAt, Items: o.Items})
	}
	return out
}

func (s *school) adminListOrders(w http.ResponseWriter, _ *http.Request, _ string) {
	all := []adminOrder{}
	for sub, a := range s.accounts.all() {
		all = append(all, adminOrders(sub, a)...)
	}
	slices.SortFunc(all, func(a, b adminOrder) int { return strings.Compare(a.CreatedAt, b.CreatedAt) })
	writeJSON(w, http.StatusOK, map[string]any{"orders": all})
}

type adminEvent struct {
	Slug          string `json:"slug"`
	Title         string `json:"title"`
	StartsAt      string `json:"starts_at"`
	EndsAt        string `json:"ends_at"`
	Price         *Price `json:"price,omitempty"`
	Registrations int    `json:"registrations"`
}

func (s *school) adminListEvents(w http.ResponseWriter, _ *http.Request, _ string) {
	seats := map[string]int{}
	for _, a := range s.accounts.all() {
		for _, r := range a.EventRegistrations {
			seats[r.EventSlug]++
		}
	}
	list := []adminEvent{}
	for _, e := range s.catalog.snapshot().Events {
		list = append(list, adminEvent{e.Slug, e.Title, e.StartsAt, e.EndsAt, e.Price, seats[e.Slug]})
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": list})
}

func (s *school) adminGetSchool(w http.ResponseWriter, _ *http.Request, _ string) {
	writeJSON(w, http.StatusOK, s.schoolSummary(s.catalog.snapshot().School))
}

// adminUpdateSchool changes the school's name or description: the one
// write besides course creation, for tests of school:write.
func (s *school) adminUpdateSchool(w http.ResponseWriter, r *http.Request, _ string) {
	var patch struct {
		Name        *string `json:"name"`
		Description *string `json:"description"`
	}
	if !decodeBody(w, r, &patch) {
		return
	}
	sch, err := s.catalog.updateSchool(patch.Name, patch.Description)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_school", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, s.schoolSummary(sch))
}

func (s *school) schoolSummary(sch School) map[string]any {
	c := s.catalog.snapshot()
	return map[string]any{
		"name":        sch.Name,
		"description": sch.Description,
		"org_id":      OrgID,
		"counts": map[string]int{
			"courses":          len(c.Courses),
			"events":           len(c.Events),
			"membership_plans": len(c.MembershipPlans),
			"digital_products": len(c.DigitalProducts),
			"students":         len(s.students()),
		},
	}
}

// decodeBody reads a small JSON body into v, answering 400 itself when it
// cannot.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body is not the expected JSON: "+bodyError(err))
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body holds more than one JSON value")
		return false
	}
	return true
}

//go:embed admin-openapi.json
var adminOpenAPI []byte

// serveAdminOpenAPI publishes the school's own description of its admin
// API, which the gateway merges into its /openapi.json (admin_openapi).
func serveAdminOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(adminOpenAPI)
}
