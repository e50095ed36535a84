package policy

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

const origin = "https://school.example"

func TestNormalizeOrigin(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"https://school.example", "https://school.example", true},
		{"https://school.example/", "https://school.example", true},
		{"HTTPS://School.Example:443/", "https://school.example", true},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"http://[::1]:8080/", "http://[::1]:8080", true},
		{"http://school.example:80", "http://school.example", true},
		{"https://school.example/path", "", false},
		{"https://school.example?x", "", false},
		{"https://school.example/?", "", false},
		{"https://school.example#f", "", false},
		{"https://user@school.example", "", false},
		{"ftp://school.example", "", false},
		{"https://school.example#", "", false},
		{"https://user:pw@school.example", "", false},
		{"https://:443", "", false},
		{"https:school.example", "", false},
		{"https://school.example:x", "", false},
		{"https://[::1]", "https://[::1]", true},
		{"https://[::1]:443", "https://[::1]", true},
		{"HTTP://LOCALHOST:8080", "http://localhost:8080", true},
		{"https://School.Example:0443", "https://school.example", true},
		{"https://school.example:08443", "https://school.example:8443", true},
		{"https://school.example:", "https://school.example", true},
		{"https://SCH%C3%9CLE.example", "https://schüle.example", true},
		{"https://[FE80::1%25eth0]", "", false},
		{"//school.example", "", false},
		{"null", "", false},
		{"school.example", "", false},
		{"", "", false},
	}
	// The one rule for every origin the gateway reads: the issuer, the
	// upstream, resource indicators, Origin headers.
	for _, tt := range tests {
		got, ok := NormalizeOrigin(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	// The result is the origin's one spelling: it parses to itself.
	for _, tt := range tests {
		if !tt.ok {
			continue
		}
		if again, err := ParseOrigin(tt.want); again != tt.want || err != nil {
			t.Errorf("ParseOrigin(%q) = %q, %v; the canonical spelling must parse to itself", tt.want, again, err)
		}
	}
	if !SameOrigin("https://school.example/", "https://SCHOOL.example") {
		t.Error("trailing slash and case must not matter")
	}
	if SameOrigin("https://school.example", "https://school.example.evil") {
		t.Error("different hosts are different origins")
	}
}

func TestCanonicalHostAndLoopback(t *testing.T) {
	for _, tt := range []struct{ hostport, scheme, want string }{
		{"School.Example:443", "https", "school.example"},
		{"school.example:80", "http", "school.example"},
		{"school.example:8443", "https", "school.example:8443"},
		{"[::1]:443", "https", "[::1]"},
		{"[::1]", "http", "[::1]"},
		{"::1", "http", "[::1]"},
		{"School.Example", "https", "school.example"},
		{"school.example", "http", "school.example"},
	} {
		if got := CanonicalHost(tt.hostport, tt.scheme); got != tt.want {
			t.Errorf("CanonicalHost(%q, %s) = %q, want %q", tt.hostport, tt.scheme, got, tt.want)
		}
	}
	// A name in its spelling, without a port, allocates nothing: a
	// platform's host table asks once a school.
	if n := testing.AllocsPerRun(100, func() { _ = CanonicalHost("school.example", "https") }); n != 0 {
		t.Errorf("CanonicalHost of a name in its spelling allocates %v times", n)
	}
	for host, want := range map[string]bool{"localhost": true, "LOCALHOST:1": true, "127.0.0.2": true, "[::1]:9": true,
		"::1": true, "localhost.evil": false, "10.0.0.1": false, "example.com:80": false} {
		if IsLoopbackHost(host) != want {
			t.Errorf("IsLoopbackHost(%q) = %v", host, !want)
		}
	}
}

func TestIsProtected(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/account/graphql", true},
		{"/account/graphql/", true},
		{"/account/graphql/x", true},
		{"//account//graphql", true},
		{"/Account/GraphQL", true},
		{"/account/./graphql", true},
		{"/x/../account/graphql", true},
		{"/account;x=1/graphql", true},
		{"/admin/api", true},
		{"/admin/api/courses", true},
		{"/ADMIN/API/courses/1", true},
		{"/admin/apix", false},
		{"/admin", false},
		{"/account", false},
		{"/account/graphqlx", true}, // a string-prefix router serves it: protected, and denied
		{"/account/graph", false},
		{"/courses/x", false},
		{"/", false},
	}
	p := &Policy{AdminPrefix: "/admin/api"}
	for _, tt := range tests {
		if _, got, err := p.Canonical(tt.path); err != nil || got != tt.want {
			t.Errorf("Canonical(%q) protected = %v, %v; want %v", tt.path, got, err, tt.want)
		}
	}
	for _, prefix := range []string{"", "/"} {
		p := &Policy{AdminPrefix: prefix}
		if _, prot, _ := p.Canonical("/anything"); prot {
			t.Errorf("admin prefix %q must not protect everything by accident", prefix)
		}
	}
}

func TestDecide(t *testing.T) {
	p := &Policy{AdminPrefix: "/admin/api", Rules: []Rule{
		{Method: "GET", Path: "/admin/api/reports/*", Requirement: Requirement{Scopes: []string{"analytics:read"}}},
		{Method: "*", Path: "/admin/api/ping", Requirement: Requirement{}},
		{Method: "DELETE", Path: "/admin/api/courses/*", Deny: true},
	}}
	tests := []struct {
		method, path string
		want         Decision
		scopes       []string
		audience     string
	}{
		{"POST", "/account/graphql", Allow, []string{"account:read"}, AudienceMember},
		{"GET", "/account/graphql", MethodNotAllowed, nil, ""},
		{"GET", "/admin/api/courses", Allow, []string{"courses:read"}, AudienceOperator},
		{"HEAD", "/admin/api/courses/7", Allow, []string{"courses:read"}, AudienceOperator},
		{"POST", "/admin/api/courses", Allow, []string{"courses:write"}, AudienceOperator},
		{"DELETE", "/admin/api/Courses/7", Deny, nil, ""},
		{"PUT", "/admin/api/Courses/7", Allow, []string{"courses:write"}, AudienceOperator},
		{"PATCH", "/admin/api/membership-plans/1", Allow, []string{"membership_plans:write"}, AudienceOperator},
		{"GET", "/admin/api/analytics", Allow, []string{"analytics:read"}, AudienceOperator},
		{"POST", "/admin/api/analytics", Deny, nil, ""},
		{"GET", "/admin/api/storage", Deny, nil, ""},
		{"GET", "/admin/api/account", Deny, nil, ""},
		{"GET", "/admin/api/unknown", Deny, nil, ""},
		{"GET", "/admin/api", Deny, nil, ""},
		{"GET", "/admin/api/", Deny, nil, ""},
		{"TRACE", "/admin/api/courses", MethodNotAllowed, nil, ""},
		{"GET", "/admin/api/x/../../api/courses", Allow, []string{"courses:read"}, AudienceOperator},
		{"GET", "/admin/api/%2e%2e/api/unknown", Deny, nil, ""},
		{"GET", "/admin/api/reports/daily", Allow, []string{"analytics:read"}, AudienceOperator},
		{"GET", "/admin/api/reports", Allow, []string{"analytics:read"}, AudienceOperator},
		// A prefix rule covers its segment and below, never a longer
		// sibling (which gets the default policy: an unknown area).
		{"GET", "/admin/api/reportsx", Deny, nil, ""},
		{"GET", "/admin/api/reports-secret/1", Deny, nil, ""},
		{"POST", "/admin/api/reports/daily", Deny, nil, ""},
		{"PUT", "/admin/api/ping", Allow, nil, AudienceOperator},
		{"GET", "/elsewhere", Deny, nil, ""},
	}
	for _, tt := range tests {
		req, d := p.Decide(tt.method, tt.path)
		if d != tt.want || !slices.Equal(req.Scopes, tt.scopes) || req.Audience != tt.audience {
			t.Errorf("Decide(%s %s) = %+v, %v; want %v %v %q", tt.method, tt.path, req, d, tt.want, tt.scopes, tt.audience)
		}
	}
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		name    string
		headers []string
		query   string
		want    string
		wantErr error
	}{
		{"ok", []string{"Bearer sgat_abc-DEF_12"}, "", "sgat_abc-DEF_12", nil},
		{"case-insensitive scheme", []string{"bearer sgat_x"}, "", "sgat_x", nil},
		{"padding", []string{"Bearer abc=="}, "", "abc==", nil},
		{"missing", nil, "", "", errNoToken},
		{"basic", []string{"Basic dXNlcjpwYXNz"}, "", "", errMalformed},
		{"empty", []string{"Bearer "}, "", "", errMalformed},
		{"space inside", []string{"Bearer a b"}, "", "", errMalformed},
		{"only padding", []string{"Bearer =="}, "", "", errMalformed},
		{"quote", []string{`Bearer "abc"`}, "", "", errMalformed},
		{"two headers", []string{"Bearer a", "Bearer b"}, "", "", errSeveral},
		{"in query", nil, "access_token=sgat_x", "", errTokenInURL},
		{"in query, beside a header", []string{"Bearer sgat_x"}, "a=1&access_token=sgat_x", "", errTokenInURL},
		{"in query, escaped name", []string{"Bearer sgat_x"}, "access%5Ftoken=sgat_x", "", errTokenInURL},
		{"in query, no value", []string{"Bearer sgat_x"}, "access_token", "", errTokenInURL},
		{"another query", []string{"Bearer sgat_x"}, "a=access_token", "sgat_x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/account/graphql?"+tt.query, nil)
			for _, h := range tt.headers {
				r.Header.Add("Authorization", h)
			}
			got, err := BearerToken(r)
			if got != tt.want || err != tt.wantErr {
				t.Errorf("got %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

type fakeLookup map[string]*Token

func (f fakeLookup) LookupAccessToken(_ context.Context, raw string) (*Token, error) {
	if raw == "broken" {
		return nil, context.DeadlineExceeded
	}
	if t, ok := f[raw]; ok {
		return t, nil
	}
	return nil, ErrInvalidToken
}

func TestCheck(t *testing.T) {
	exp := time.Now().Add(time.Hour)
	member := &Token{Subject: "m1", Audience: AudienceMember, Scopes: []string{"openid", "account:read"},
		Resource: origin, Issuer: origin, ExpiresAt: exp}
	lookup := fakeLookup{
		"member":     member,
		"foreign":    {Subject: "m1", Audience: AudienceMember, Scopes: []string{"account:read"}, Resource: "https://other.example", Issuer: "https://other.example"},
		"wrongres":   {Subject: "m1", Audience: AudienceMember, Scopes: []string{"account:read"}, Resource: "https://other.example", Issuer: origin},
		"nores":      {Subject: "m1", Audience: AudienceMember, Scopes: []string{"account:read"}, Issuer: origin},
		"operator":   {Subject: "o1", Audience: AudienceOperator, Scopes: []string{"courses:read"}, Issuer: origin},
		"opresource": {Subject: "o1", Audience: AudienceOperator, Scopes: []string{"courses:read"}, Issuer: origin, Resource: origin + "/"},
	}
	account := Requirement{Audience: AudienceMember, Scopes: []string{"account:read"}}
	tests := []struct {
		name   string
		auth   string
		req    Requirement
		status int
		code   string
		scope  string
	}{
		{"member ok", "Bearer member", account, 0, "", ""},
		{"no token", "", account, 401, "invalid_token", ""},
		{"unknown", "Bearer nope", account, 401, "invalid_token", ""},
		{"malformed", "Bearer a\"b", account, 401, "invalid_token", ""},
		{"foreign issuer", "Bearer foreign", account, 401, "invalid_token", ""},
		{"foreign resource", "Bearer wrongres", account, 401, "invalid_token", ""},
		{"member without resource", "Bearer nores", account, 401, "invalid_token", ""},
		{"operator at account", "Bearer operator", account, 403, "insufficient_scope", "account:read"},
		{"member at admin", "Bearer member", Requirement{Audience: AudienceOperator, Scopes: []string{"courses:read"}}, 403, "insufficient_scope", "courses:read"},
		{"operator ok", "Bearer operator", Requirement{Audience: AudienceOperator, Scopes: []string{"courses:read"}}, 0, "", ""},
		{"operator bound by resource", "Bearer opresource", Requirement{Audience: AudienceOperator, Scopes: []string{"courses:read"}}, 0, "", ""},
		{"missing scope", "Bearer operator", Requirement{Audience: AudienceOperator, Scopes: []string{"courses:read", "courses:write"}}, 403, "insufficient_scope", "courses:read courses:write"},
		{"lookup failure", "Bearer broken", account, 503, "temporarily_unavailable", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/account/graphql", nil)
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			tok, ch := Check(context.Background(), lookup, r, tt.req, origin)
			if tt.status == 0 {
				if ch != nil || tok == nil {
					t.Fatalf("want success, got %+v", ch)
				}
				return
			}
			if ch == nil {
				t.Fatalf("want %d %s, got success", tt.status, tt.code)
			}
			if ch.Status != tt.status || ch.Error != tt.code || ch.Scope != tt.scope {
				t.Errorf("got %d %s scope=%q (%s)", ch.Status, ch.Error, ch.Scope, ch.Description)
			}
		})
	}
}

func TestChallengeWrite(t *testing.T) {
	ch := &Challenge{Status: 403, Error: "insufficient_scope", Description: `needs "x" \ y`,
		Scope: "courses:read courses:write", ResourceMetadata: origin + "/.well-known/oauth-protected-resource"}
	rec := httptest.NewRecorder()
	ch.Write(rec)
	if rec.Code != 403 {
		t.Fatalf("status %d", rec.Code)
	}
	params, err := ParseChallenge(rec.Header().Get("WWW-Authenticate"))
	if err != nil {
		t.Fatalf("our own header does not parse: %v", err)
	}
	want := map[string]string{"error": "insufficient_scope", "error_description": `needs 'x' ' y`,
		"scope": "courses:read courses:write", "resource_metadata": origin + "/.well-known/oauth-protected-resource"}
	for k, v := range want {
		if params[k] != v {
			t.Errorf("%s = %q, want %q", k, params[k], v)
		}
	}
	if got := rec.Header().Get("Access-Control-Expose-Headers"); !strings.Contains(got, "WWW-Authenticate") {
		t.Errorf("WWW-Authenticate not exposed to CORS: %q", got)
	}
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error"] != "insufficient_scope" ||
		body["error_description"] != want["error_description"] {
		t.Errorf("body %q: %v", rec.Body, err)
	}
	if rec.Header().Get("Cache-Control") != "no-store" {
		t.Error("challenges must not be cached")
	}
}

func TestParseChallenge(t *testing.T) {
	good := []string{
		`Bearer`,
		`Bearer error="invalid_token"`,
		`bearer realm="x", error=invalid_token`,
		`Bearer error="a,b", scope="x y"`,
	}
	for _, v := range good {
		if _, err := ParseChallenge(v); err != nil {
			t.Errorf("ParseChallenge(%q): %v", v, err)
		}
	}
	bad := []string{`Basic realm="x"`, `Bearer error="x`, `Bearer error="x" scope="y"`, `Bearer a="1", a="2"`, `Bearer =x`}
	for _, v := range bad {
		if _, err := ParseChallenge(v); err == nil {
			t.Errorf("ParseChallenge(%q) accepted", v)
		}
	}
}

func TestScopes(t *testing.T) {
	if len(AllScopes) != 38 {
		t.Errorf("the scope table has 38 scopes, got %d", len(AllScopes))
	}
	seen := map[string]bool{}
	for _, s := range AllScopes {
		if seen[s] {
			t.Errorf("duplicate scope %s", s)
		}
		seen[s] = true
		if d := ScopeDescription(s); d == "" || d == s {
			t.Errorf("scope %s has no description", s)
		}
	}
	if areaScope("account", "read") != "" {
		t.Error("account:read must never be an admin-area scope")
	}
}

func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{"/account/graphql", "//a/../b", "/%2e%2e/", "/a;b/c", "\\x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		n := normalizePath(p)
		if !strings.HasPrefix(n, "/") || strings.Contains(n, "//") || strings.Contains(n, "/../") {
			t.Fatalf("normalizePath(%q) = %q is not canonical", p, n)
		}
		if normalizePath(n) != n && !strings.Contains(n, "%") {
			t.Fatalf("normalizePath not idempotent on %q: %q -> %q", p, n, normalizePath(n))
		}
	})
}

func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer sgat_x", "bearer  x==", "Basic x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", h)
		tok, err := BearerToken(r)
		if err == nil && (tok == "" || strings.ContainsAny(tok, " \t\"\\,")) {
			t.Fatalf("accepted %q as token %q", h, tok)
		}
	})
}

func FuzzParseChallenge(f *testing.F) {
	f.Add(`Bearer error="invalid_token", resource_metadata="https://x/.well-known/oauth-protected-resource"`)
	f.Fuzz(func(t *testing.T, v string) {
		_, _ = ParseChallenge(v)
		c := &Challenge{Error: "invalid_token", Description: v}
		if _, err := ParseChallenge(c.Header()); err != nil {
			t.Fatalf("our header for description %q does not parse: %v", v, err)
		}
	})
}

// A failed lookup is no verdict on the token: 503 with Retry-After and the
// JSON error, and no Bearer challenge that would send a client to
// authorize again or drop its token. Browser clients can read both.
func TestUnavailableWrite(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ch            *Challenge
		status        int
		challenge     bool
		retryAfter    string
		code          string
		exposeHeaders []string
	}{
		{"refusal", &Challenge{Status: 401, Error: "invalid_token", Description: "no"}, 401, true, "",
			"invalid_token", []string{"WWW-Authenticate", "Retry-After"}},
		{"store unavailable", Unavailable(), 503, false, "5",
			"temporarily_unavailable", []string{"WWW-Authenticate", "Retry-After"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.ch.ResourceMetadata = origin + "/.well-known/oauth-protected-resource"
			rec := httptest.NewRecorder()
			tc.ch.Write(rec)
			h := rec.Header()
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d", rec.Code, tc.status)
			}
			if got := h.Get("WWW-Authenticate") != ""; got != tc.challenge {
				t.Errorf("WWW-Authenticate %q, want one: %v", h.Get("WWW-Authenticate"), tc.challenge)
			}
			if got := h.Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			for _, name := range tc.exposeHeaders {
				if !strings.Contains(h.Get("Access-Control-Expose-Headers"), name) {
					t.Errorf("%s not exposed to CORS: %q", name, h.Get("Access-Control-Expose-Headers"))
				}
			}
			var body map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error"] != tc.code || body["error_description"] == "" {
				t.Errorf("body %q: %v", rec.Body, err)
			}
			if h.Get("Cache-Control") != "no-store" {
				t.Error("answers of protected resources must not be cached")
			}
		})
	}
}
