package demoschool

import (
	"errors"
	"fmt"

	"github.com/vektah/gqlparser/v2/ast"
)

// The Go side of schema.graphql. Queries read a snapshot of the member's
// account taken once per request, so one response is always consistent.

var errIntrospection = errors.New("introspection is not supported by the demo school; see schema.graphql in its source")

func unknownField(typeName string, f *ast.Field) error {
	return fmt.Errorf("no field %q on %s", f.Name, typeName)
}

// firstN applies a connection's `first` argument: absent means all.
func firstN(x *execution, f *ast.Field, total int) (int, error) {
	n, ok, err := x.intArg(f, "first")
	if err != nil || !ok {
		return total, err
	}
	if n < 0 {
		return 0, fmt.Errorf("first must not be negative, got %d", n)
	}
	return min(n, total), nil
}

type gqlQuery struct {
	viewer *gqlViewer
}

func (gqlQuery) typeName() string { return "Query" }

func (q gqlQuery) field(_ *execution, f *ast.Field) (any, error) {
	switch f.Name {
	case "viewer":
		return q.viewer, nil
	case "__schema", "__type":
		return nil, errIntrospection
	}
	return nil, unknownField("Query", f)
}

type gqlMutation struct {
	school *school
	user   *User
}

func (gqlMutation) typeName() string { return "Mutation" }

func (m gqlMutation) field(x *execution, f *ast.Field) (any, error) {
	if f.Name != "updateLecturePosition" {
		return nil, unknownField("Mutation", f)
	}
	slug, err := x.stringArg(f, "courseSlug")
	if err != nil {
		return nil, err
	}
	lecture, err := x.stringArg(f, "lectureId")
	if err != nil {
		return nil, err
	}
	pos, ok, err := x.intArg(f, "positionSeconds")
	if err != nil {
		return nil, err
	}
	switch {
	case !ok:
		return nil, errors.New("positionSeconds is required")
	case pos < 0:
		return nil, fmt.Errorf("positionSeconds must not be negative, got %d", pos)
	case lecture == "" || len(lecture) > 200:
		return nil, errors.New("lectureId must be 1 to 200 characters")
	}
	p, err := m.school.accounts.setPosition(m.user.Sub, slug, lecturePosition{LectureID: lecture, PositionSeconds: pos})
	if err != nil {
		return nil, err
	}
	return gqlLecture(p), nil
}

type gqlViewer struct {
	user    *User
	account account
}

func (*gqlViewer) typeName() string { return "Viewer" }

func (v *gqlViewer) field(x *execution, f *ast.Field) (any, error) {
	switch f.Name {
	case "id":
		return v.user.Sub, nil
	case "email":
		return v.user.Email, nil
	case "name":
		return v.user.Name, nil
	case "enrolledCourses":
		n, err := firstN(x, f, len(v.account.Enrollments))
		if err != nil {
			return nil, err
		}
		return gqlEnrolledCourses{nodes: v.account.Enrollments[:n], total: len(v.account.Enrollments)}, nil
	case "orders":
		n, err := firstN(x, f, len(v.account.Orders))
		if err != nil {
			return nil, err
		}
		return objects(v.account.Orders[:n], func(o order) gqlObject { return gqlOrder(o) }), nil
	case "eventRegistrations":
		n, err := firstN(x, f, len(v.account.EventRegistrations))
		if err != nil {
			return nil, err
		}
		return objects(v.account.EventRegistrations[:n], func(r eventRegistration) gqlObject { return gqlEventRegistration(r) }), nil
	}
	return nil, unknownField("Viewer", f)
}

func objects[T any](items []T, wrap func(T) gqlObject) []gqlObject {
	out := make([]gqlObject, len(items))
	for i, it := range items {
		out[i] = wrap(it)
	}
	return out
}

type gqlEnrolledCourses struct {
	nodes []enrollment
	total int
}

func (gqlEnrolledCourses) typeName() string { return "EnrolledCourseConnection" }

func (c gqlEnrolledCourses) field(_ *execution, f *ast.Field) (any, error) {
	switch f.Name {
	case "nodes":
		return objects(c.nodes, func(e enrollment) gqlObject { return gqlEnrolledCourse(e) }), nil
	case "totalCount":
		return c.total, nil
	}
	return nil, unknownField("EnrolledCourseConnection", f)
}

type gqlEnrolledCourse enrollment

func (gqlEnrolledCourse) typeName() string { return "EnrolledCourse" }

func (e gqlEnrolledCourse) field(_ *execution, f *ast.Field) (any, error) {
	switch f.Name {
	case "slug":
		return e.Slug, nil
	case "expireDate":
		if e.ExpireDate == nil {
			return nil, nil
		}
		return *e.ExpireDate, nil
	case "hasLifetimeAccess":
		return e.HasLifetimeAccess, nil
	case "lastWatchedLecture":
		// An explicit nil: a nil *lecturePosition inside the interface would
		// not read as GraphQL null.
		if e.LastWatchedLecture == nil {
			return nil, nil
		}
		return gqlLecture(*e.LastWatchedLecture), nil
	}
	return nil, unknownField("EnrolledCourse", f)
}

type gqlLecture lecturePosition

func (gqlLecture) typeName() string { return "LastWatchedLecture" }

func (p gqlLecture) field(_ *execution, f *ast.Field) (any, error) {
	switch f.Name {
	case "lectureId":
		return p.LectureID, nil
	case "positionSeconds":
		return p.PositionSeconds, nil
	}
	return nil, unknownField("LastWatchedLecture", f)
}

type gqlOrder order

func (gqlOrder) typeName() string { return "Order" }

func (o gqlOrder) field(_ *execution, f *ast.Field) (any, error) {
	switch f.Name {
	case "id":
		return o.ID, nil
	case "total":
		return o.Total, nil
	case "currency":
		return o.Currency, nil
	case "createdAt":
		return o.CreatedAt, nil
	}
	return nil, unknownField("Order", f)
}

type gqlEventRegistration eventRegistration

func (gqlEventRegistration) typeName() string { return "EventRegistration" }

func (r gqlEventRegistration) field(_ *execution, f *ast.Field) (any, error) {
	switch f.Name {
	case "eventSlug":
		return r.EventSlug, nil
	case "registeredAt":
		return r.RegisteredAt, nil
	}
	return nil, unknownField("EventRegistration", f)
}
