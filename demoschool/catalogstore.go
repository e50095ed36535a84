package demoschool

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// catalogStore holds the live catalog. Readers (pages, /catalog.json, the
// admin API) take a snapshot without locking; the rare admin writes copy,
// change and swap, so a page never sees half an edit.
type catalogStore struct {
	mu  sync.Mutex // serialises writers only
	cur atomic.Pointer[Catalog]
}

func newCatalogStore(c *Catalog) *catalogStore {
	s := &catalogStore{}
	s.cur.Store(c.clone())
	return s
}

// snapshot returns the current catalog; callers must not modify it.
func (s *catalogStore) snapshot() *Catalog {
	return s.cur.Load()
}

// errConflict reports an edit that clashes with what is already there.
type errConflict struct{ msg string }

func (e errConflict) Error() string { return e.msg }

// addCourse appends a course, refusing a slug that is already taken.
func (s *catalogStore) addCourse(c Course) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.cur.Load().clone()
	if _, ok := next.course(c.Slug); ok {
		return errConflict{fmt.Sprintf("a course with slug %q already exists", c.Slug)}
	}
	next.Courses = append(next.Courses, c)
	if err := next.validate(); err != nil {
		return err
	}
	s.cur.Store(next)
	return nil
}

// updateSchool replaces the school's name and description, keeping its
// other members.
func (s *catalogStore) updateSchool(name, description *string) (School, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.cur.Load().clone()
	if name != nil {
		next.School.Name = *name
	}
	if description != nil {
		next.School.Description = *description
	}
	if err := next.validate(); err != nil {
		return School{}, err
	}
	s.cur.Store(next)
	return next.School, nil
}
