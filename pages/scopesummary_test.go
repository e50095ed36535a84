package pages

import (
	"testing"

	"github.com/schoolgate/schoolgate/i18n"
)

// An application's one line says the most far-reaching thing its scopes
// let it do, in every language, and never falls back to a key.
func TestScopeSummary(t *testing.T) {
	for _, c := range []struct {
		scopes []string
		want   string
	}{
		{[]string{"openid"}, "Can only sign you in"},
		{[]string{"openid", "email"}, "Can see who you are"},
		{[]string{"openid", "profile", "offline_access"}, "Can see who you are"},
		{[]string{"openid", "profile", "account:read"}, "Can read your courses, progress and orders"},
		{[]string{"account:read", "account:write"}, "Can read and change your courses, orders and registrations"},
		{[]string{"account:read", "courses:read"}, "Can read the school's data"},
		{[]string{"courses:write"}, "Can read and change the school's data"},
		{[]string{"storage:write"}, "Can change the school's data"},
		{[]string{"storage:write", "courses:read"}, "Can read and change the school's data"},
		{[]string{"offline_access"}, "Stay connected when you are not using it"},
		{[]string{"mystery"}, "mystery"},
		{nil, "No permissions"},
	} {
		if got := scopeSummaryWords("en", c.scopes); got != c.want {
			t.Errorf("summary of %v = %q, want %q", c.scopes, got, c.want)
		}
		key := scopeSummary(c.scopes)
		for _, lang := range i18n.Languages {
			if key != "" && msg(lang, key) == key {
				t.Errorf("%s: no message %s", lang, key)
			}
		}
	}
}
