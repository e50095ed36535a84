package demoschool

import (
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestSessionLookup(t *testing.T) {
	h := New(Options{})
	member := signIn(t, h, "student@demo.school", "student")
	owner := signIn(t, h, "owner@demo.school", "owner")
	tests := []struct {
		name   string
		header http.Header
		want   map[string]any // nil: expect 401
	}{
		{"no cookie", nil, nil},
		{"unknown session", http.Header{"Cookie": {SessionCookie + "=forged"}}, nil},
		{"empty session", http.Header{"Cookie": {SessionCookie + "="}}, nil},
		{"other cookie only", http.Header{"Cookie": {"theme=dark"}}, nil},
		{"member", cookieHeader(member), map[string]any{
			"sub": "member-1", "email": "student@demo.school", "name": "Sam Student",
			"org_id": "demo-school", "roles": []any{"student"},
		}},
		{"operator among other cookies", http.Header{"Cookie": {"theme=dark; " + owner.Name + "=" + owner.Value}}, map[string]any{
			"sub": "operator-1", "email": "owner@demo.school", "name": "Olivia Owner",
			"org_id": "demo-school", "roles": []any{"owner"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := call(t, h, http.MethodGet, "/api/session", nil, tt.header)
			got := decode(t, rec)
			if tt.want == nil {
				if rec.Code != http.StatusUnauthorized || got["error"] == nil {
					t.Errorf("want 401 with an error, got %d %v", rec.Code, got)
				}
				return
			}
			if rec.Code != http.StatusOK || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %d %v, want %v", rec.Code, got, tt.want)
			}
			if rec.Header().Get("Cache-Control") != "no-store" {
				t.Error("session document may be cached")
			}
		})
	}
}

func TestSessionExpires(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := New(Options{Now: clock})
	c := signIn(t, h, "student@demo.school", "student")
	if rec := call(t, h, http.MethodGet, "/api/session", nil, cookieHeader(c)); rec.Code != http.StatusOK {
		t.Fatalf("fresh session: %d", rec.Code)
	}
	mu.Lock()
	now = now.Add(sessionTTL)
	mu.Unlock()
	if rec := call(t, h, http.MethodGet, "/api/session", nil, cookieHeader(c)); rec.Code != http.StatusUnauthorized {
		t.Errorf("expired session still resolves: %d", rec.Code)
	}
}

func TestSchoolsAreIndependent(t *testing.T) {
	a, b := New(Options{}), New(Options{})
	c := signIn(t, a, "student@demo.school", "student")
	if rec := call(t, b, http.MethodGet, "/api/session", nil, cookieHeader(c)); rec.Code != http.StatusUnauthorized {
		t.Errorf("a session of one school works at another: %d", rec.Code)
	}
}
