package mcpserver

import (
	"fmt"
	"time"
)

// parseDateArg reads a date (2027-03-13, taken as UTC) or an RFC 3339
// date-time. A date as the end of a range means the whole day, so
// "to": "2027-03-13" includes events starting that evening.
func parseDateArg(name, s string, endOfDay bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is neither a date (2027-03-13) nor an RFC 3339 date-time (2027-03-13T10:00:00Z)", name, clipString(s))
	}
	if endOfDay {
		d = d.Add(24*time.Hour - time.Nanosecond)
	}
	return d, nil
}
