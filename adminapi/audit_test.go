package adminapi

import (
	"testing"
	"time"
)

// Times are RFC 3339 or a duration ago.
func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	if got, err := parseWhen("since", "90m", now); err != nil || !got.Equal(now.Add(-90*time.Minute)) {
		t.Errorf("90m = %v, %v", got, err)
	}
	if got, err := parseWhen("since", "2026-11-01T00:00:00Z", now); err != nil || got.Day() != 1 {
		t.Errorf("RFC 3339 = %v, %v", got, err)
	}
}
