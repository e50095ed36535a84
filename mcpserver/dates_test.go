package mcpserver

import (
	"testing"
	"time"
)

func TestParseDateArg(t *testing.T) {
	tests := []struct {
		in       string
		endOfDay bool
		want     string // RFC 3339 with nanoseconds; "" = zero time
		wantErr  bool
	}{
		{"", false, "", false},
		{"2027-03-13", false, "2027-03-13T00:00:00Z", false},
		{"2027-03-13", true, "2027-03-13T23:59:59.999999999Z", false},
		{"2027-03-13T10:00:00+01:00", true, "2027-03-13T10:00:00+01:00", false},
		{"2027-03-13T10:00:00.5Z", false, "2027-03-13T10:00:00.5Z", false},
		{"2027-3-13", false, "", true},
		{"2027-02-30", false, "", true},
		{"13.03.2027", false, "", true},
		{"2027-03-13T10:00", false, "", true},
		{"tomorrow", false, "", true},
	}
	for _, tt := range tests {
		got, err := parseDateArg("from", tt.in, tt.endOfDay)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err %v", tt.in, err)
			continue
		}
		if tt.wantErr {
			continue
		}
		s := ""
		if !got.IsZero() {
			s = got.Format(time.RFC3339Nano)
		}
		if s != tt.want {
			t.Errorf("%q (endOfDay %v) = %s, want %s", tt.in, tt.endOfDay, s, tt.want)
		}
	}
}

func FuzzParseDateArg(f *testing.F) {
	for _, s := range []string{"2027-03-13", "2027-03-13T10:00:00+01:00", "9999-12-31", "0000-01-01T00:00:00Z"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, endOfDay bool) {
		got, err := parseDateArg("to", s, endOfDay)
		if err != nil || s == "" {
			return
		}
		if _, rfcErr := time.Parse(time.RFC3339, s); rfcErr == nil {
			return
		}
		// Otherwise it was a calendar date: midnight UTC, or the last
		// instant of that day for the end of a range.
		d, dateErr := time.Parse(time.DateOnly, s)
		if dateErr != nil {
			t.Fatalf("%q accepted but is neither form", s)
		}
		if endOfDay != got.After(d) || got.Sub(d) >= 24*time.Hour || got.Location() != time.UTC {
			t.Fatalf("%q (endOfDay %v) = %v", s, endOfDay, got)
		}
	})
}
