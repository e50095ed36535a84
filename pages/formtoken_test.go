package pages

import (
	"testing"
	"time"
)

// A form token passes only for its own purpose, person and age: an admin
// form's token is no account form's, and the reverse.
func TestFormTokenPurposes(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	admin, account := adminCSRFToken(key, "p-1", now), accountCSRFToken(key, "p-1", now)
	tests := []struct {
		name  string
		check func(string) bool
		token string
		ok    bool
	}{
		{"admin token on the admin form", func(tok string) bool { return checkAdminCSRF(key, "p-1", tok, now) }, admin, true},
		{"account token on the account form", func(tok string) bool { return checkAccountCSRF(key, "p-1", tok, now) }, account, true},
		{"account token on the admin form", func(tok string) bool { return checkAdminCSRF(key, "p-1", tok, now) }, account, false},
		{"admin token on the account form", func(tok string) bool { return checkAccountCSRF(key, "p-1", tok, now) }, admin, false},
		{"another person's account token", func(tok string) bool { return checkAccountCSRF(key, "p-2", tok, now) }, account, false},
		{"an account token past its age", func(tok string) bool {
			return checkAccountCSRF(key, "p-1", tok, now.Add(adminCSRFMaxAge+time.Second))
		}, account, false},
	}
	for _, tt := range tests {
		if got := tt.check(tt.token); got != tt.ok {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.ok)
		}
	}
}
