package authserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/sitepath"
)

func TestLimiterBucket(t *testing.T) {
	l := newLimiter(Per(60, time.Minute, 3)) // one a second, burst 3
	now := time.Unix(1e9, 0)
	for i := 0; i < 3; i++ {
		if ok, _ := l.allow("a", now); !ok {
			t.Fatalf("burst request %d refused", i)
		}
	}
	ok, wait := l.allow("a", now)
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("4th request: ok=%v wait=%v", ok, wait)
	}
	if ok, _ := l.allow("b", now); !ok {
		t.Error("another key shares the bucket")
	}
	// A refused request takes nothing: after the wait, one is allowed.
	if ok, _ := l.allow("a", now.Add(wait)); !ok {
		t.Error("not allowed after Retry-After")
	}
	var off *limiter = newLimiter(Limit{})
	if ok, _ := off.allow("a", now); !ok || off != nil {
		t.Error("a disabled limit refuses")
	}
}

// limitedFixture has tiny limits so a test can exhaust them.
func limitedFixture(t *testing.T, l RateLimits) *fixture {
	f := newFixture(t)
	f.srv.limits = newLimiters(l)
	return f
}

func TestRateLimitsPerEndpoint(t *testing.T) {
	one := Per(1, time.Hour, 1)
	tests := []struct {
		name   string
		limits RateLimits
		call   func(f *fixture) (int, http.Header, string)
		json   bool
	}{
		{"register", RateLimits{Register: one}, func(f *fixture) (int, http.Header, string) {
			rec := f.serve("POST", sitepath.Register, strings.NewReader(`{"redirect_uris":["http://127.0.0.1:1/cb"]}`),
				map[string]string{"Content-Type": "application/json"})
			return rec.Code, rec.Header(), rec.Body.String()
		}, true},
		{"token per address", RateLimits{Token: one}, func(f *fixture) (int, http.Header, string) {
			rec := f.serve("POST", sitepath.Token, strings.NewReader("grant_type=refresh_token&refresh_token=x&client_id="+memberClient),
				map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
			return rec.Code, rec.Header(), rec.Body.String()
		}, true},
		{"token per client", RateLimits{TokenClient: one}, func(f *fixture) (int, http.Header, string) {
			rec := f.serve("POST", sitepath.Token, strings.NewReader("grant_type=refresh_token&refresh_token=x&client_id="+memberClient),
				map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
			return rec.Code, rec.Header(), rec.Body.String()
		}, true},
		{"revoke", RateLimits{Revoke: one}, func(f *fixture) (int, http.Header, string) {
			rec := f.serve("POST", sitepath.Revoke, strings.NewReader("token=x&client_id="+memberClient),
				map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
			return rec.Code, rec.Header(), rec.Body.String()
		}, true},
		{"introspect", RateLimits{Revoke: one}, func(f *fixture) (int, http.Header, string) {
			rec := f.serve("POST", sitepath.Introspect, strings.NewReader("token=x&client_id="+memberClient),
				map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
			return rec.Code, rec.Header(), rec.Body.String()
		}, true},
		{"authorize", RateLimits{Authorize: one}, func(f *fixture) (int, http.Header, string) {
			_, ch := pkce()
			rec := f.serve("GET", sitepath.Authorize+"?"+authParams(ch).Encode(), nil, nil)
			return rec.Code, rec.Header(), rec.Body.String()
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := limitedFixture(t, tt.limits)
			if status, _, body := tt.call(f); status == http.StatusTooManyRequests {
				t.Fatalf("first request refused: %s", body)
			}
			status, h, body := tt.call(f)
			if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
				t.Fatalf("second request: %d Retry-After=%q %s", status, h.Get("Retry-After"), body)
			}
			if tt.json {
				var e struct{ Error, ErrorDescription string }
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error != "temporarily_unavailable" {
					t.Errorf("429 body is not RFC 6749 shaped: %s", body)
				}
			} else if h.Get("Location") != "" || !strings.Contains(body, "Too many requests") {
				t.Errorf("authorize 429 must be a page, never a redirect: %q %s", h.Get("Location"), body)
			}
		})
	}
}

func TestNewClientsPerAddress(t *testing.T) {
	f := limitedFixture(t, RateLimits{NewClients: Per(2, time.Hour, 2)})
	reg := func(port int) *http.Response {
		body := `{"client_name":"cli","redirect_uris":["http://127.0.0.1:` + strconv.Itoa(port) + `/cb"]}`
		return f.serve("POST", sitepath.Register, strings.NewReader(body), map[string]string{"Content-Type": "application/json"}).Result()
	}
	for _, p := range []int{1, 2, 1, 2} { // two new clients, then the same two again
		if r := reg(p); r.StatusCode != http.StatusCreated {
			t.Fatalf("registration %d: %d", p, r.StatusCode)
		}
	}
	if r := reg(3); r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Fatalf("third new client: %d", r.StatusCode)
	}
}

func TestDefaultRateLimitsLeaveNormalUseAlone(t *testing.T) {
	f := newFixture(t)
	for i := 0; i < 50; i++ {
		v, c := pkce()
		code := f.code(authParams(c), v)
		if status, m := f.exchange(code, v); status != 200 {
			t.Fatalf("exchange %d: %d %v", i, status, m)
		}
	}
}

// The per-address bound on new clients is a 429 like the other limits,
// and counted as one: rate_limited, never temporarily_unavailable, which
// names the store failing.
func TestNewClientsCountedRateLimited(t *testing.T) {
	f := limitedFixture(t, RateLimits{NewClients: Per(1, time.Hour, 1)})
	obs := &refusals{}
	f.srv.cfg.Observer = obs
	for port := range 2 {
		body := `{"client_name":"cli","redirect_uris":["http://127.0.0.1:` + strconv.Itoa(port+1) + `/cb"]}`
		f.serve("POST", sitepath.Register, strings.NewReader(body), map[string]string{"Content-Type": "application/json"})
	}
	if obs.last != "register rate_limited" {
		t.Errorf("the second new client is counted %q, want register rate_limited", obs.last)
	}
}
