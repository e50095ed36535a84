package pgstore

import "time"

// nullTime stores the zero time, which the records use for "never", as
// NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// timeOf reads a nullable column back: NULL is the zero time, anything
// else is returned in UTC, as it was stored.
func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
