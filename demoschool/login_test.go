package demoschool

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func TestLoginForm(t *testing.T) {
	h := New(Options{})
	returnTo := `http://example.test/oauth/authorize?client_id=a&state="x"`
	rec := call(t, h, http.MethodGet, "/login?return_to="+url.QueryEscape(returnTo), nil, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	body := rec.Body.String()
	for _, want := range []string{`id="email" name="email"`, `id="password" name="password"`, `id="login"`, `method="post" action="/login"`} {
		if !strings.Contains(body, want) {
			t.Errorf("form lacks %s", want)
		}
	}
	// The e2e tests read return_to back with this very pattern.
	m := regexp.MustCompile(`name="return_to" value="([^"]*)"`).FindStringSubmatch(body)
	if m == nil || html.UnescapeString(m[1]) != returnTo {
		t.Errorf("return_to not carried in the form: %v", m)
	}
	if rec.Header().Get("Cache-Control") != "no-store" {
		t.Error("login page may be cached")
	}
}

func TestLogin(t *testing.T) {
	const target = "http://school.test/oauth/authorize?client_id=c&state=s"
	tests := []struct {
		name         string
		email, pass  string
		returnTo     string
		wantStatus   int
		wantLocation string
	}{
		{"member", "student@demo.school", "student", target, http.StatusSeeOther, target},
		{"second member", "second@demo.school", "student2", "/courses/landscape-photography", http.StatusSeeOther, "/courses/landscape-photography"},
		{"operator", "owner@demo.school", "owner", "", http.StatusSeeOther, "/"},
		{"e-mail is case-insensitive", "  Student@Demo.School ", "student", "/", http.StatusSeeOther, "/"},
		{"wrong password", "student@demo.school", "owner", target, http.StatusUnauthorized, ""},
		{"another member's password", "second@demo.school", "student", target, http.StatusUnauthorized, ""},
		{"unknown e-mail", "nobody@demo.school", "student", target, http.StatusUnauthorized, ""},
		{"empty password", "student@demo.school", "", target, http.StatusUnauthorized, ""},
		{"password prefix", "student@demo.school", "stud", target, http.StatusUnauthorized, ""},
		{"open redirect is dropped", "student@demo.school", "student", "https://evil.example/steal", http.StatusSeeOther, "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New(Options{})
			form := url.Values{"email": {tt.email}, "password": {tt.pass}, "return_to": {tt.returnTo}}
			req := postForm(t, h, "http://school.test/login", form, nil)
			if req.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", req.Code, tt.wantStatus, req.Body)
			}
			cookies := req.Result().Cookies()
			if tt.wantStatus != http.StatusSeeOther {
				if len(cookies) != 0 {
					t.Errorf("a failed login set cookies: %v", cookies)
				}
				body := req.Body.String()
				if !strings.Contains(body, `id="login-error"`) || !strings.Contains(body, `id="password"`) {
					t.Errorf("no form with an error: %s", body)
				}
				if !strings.Contains(body, `name="return_to" value="`+html.EscapeString(tt.returnTo)+`"`) {
					t.Errorf("the form lost return_to")
				}
				return
			}
			if got := req.Header().Get("Location"); got != tt.wantLocation {
				t.Errorf("Location %q, want %q", got, tt.wantLocation)
			}
			if len(cookies) != 1 {
				t.Fatalf("want one cookie, got %v", cookies)
			}
			c := cookies[0]
			if c.Name != SessionCookie || len(c.Value) < 40 || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure {
				t.Errorf("cookie %+v", c)
			}
			rec := call(t, h, http.MethodGet, "/api/session", nil, cookieHeader(c))
			if rec.Code != http.StatusOK || decode(t, rec)["email"] != strings.ToLower(strings.TrimSpace(tt.email)) {
				t.Errorf("the new session does not resolve: %d %s", rec.Code, rec.Body)
			}
		})
	}
}

func TestLoginSecureCookieBehindHTTPS(t *testing.T) {
	h := New(Options{})
	rec := postForm(t, h, "/login", url.Values{"email": {"student@demo.school"}, "password": {"student"}},
		http.Header{"X-Forwarded-Proto": {"https"}})
	if c := rec.Result().Cookies(); len(c) != 1 || !c[0].Secure {
		t.Errorf("cookie over https is not Secure: %v", c)
	}
}

func TestLoginReplacesOldSession(t *testing.T) {
	h := New(Options{})
	old := signIn(t, h, "student@demo.school", "student")
	rec := postForm(t, h, "/login", url.Values{"email": {"owner@demo.school"}, "password": {"owner"}}, cookieHeader(old))
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("status %d", rec.Code)
	}
	if rec := call(t, h, http.MethodGet, "/api/session", nil, cookieHeader(old)); rec.Code != http.StatusUnauthorized {
		t.Errorf("the session from before sign-in still works: %d", rec.Code)
	}
}

func TestLogout(t *testing.T) {
	h := New(Options{})
	c := signIn(t, h, "student@demo.school", "student")
	rec := postForm(t, h, "/logout", url.Values{"return_to": {"//evil.example"}}, cookieHeader(c))
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/" {
		t.Errorf("logout answered %d to %q", rec.Code, rec.Header().Get("Location"))
	}
	if cs := rec.Result().Cookies(); len(cs) != 1 || cs[0].MaxAge >= 0 {
		t.Errorf("logout did not clear the cookie: %v", cs)
	}
	if rec := call(t, h, http.MethodGet, "/api/session", nil, cookieHeader(c)); rec.Code != http.StatusUnauthorized {
		t.Errorf("session survives logout: %d", rec.Code)
	}
	if rec := call(t, h, http.MethodGet, "/logout", nil, nil); rec.Code == http.StatusSeeOther {
		t.Error("GET /logout must not sign anyone out")
	}
}

func TestSafeReturnTo(t *testing.T) {
	const host = "127.0.0.1:8080"
	tests := []struct {
		raw  string
		want string // "" means the same as raw
	}{
		{"/", ""},
		{"/courses/portrait-photography?x=1#top", ""},
		{"http://127.0.0.1:8080/oauth/authorize?client_id=a&state=b", ""},
		{"https://127.0.0.1:8080/oauth/authorize", ""},
		{"HTTP://127.0.0.1:8080/x", ""},
		{"", "/"},
		{"//evil.example/x", "/"},
		{"///evil.example/x", "/"},
		{`/\evil.example`, "/"},
		{`\\evil.example`, "/"},
		{"/\t/evil.example", "/"},
		{"/\n/evil.example", "/"},
		{" //evil.example", "/"},
		{"https://evil.example/", "/"},
		{"http://127.0.0.1:8080.evil.example/", "/"},
		{"http://evil.example@127.0.0.1:8080/", "/"},
		{"http://127.0.0.1:8080@evil.example/", "/"},
		{"http://127.0.0.1/", "/"},
		{"http://127.0.0.1:9080/", "/"},
		{"javascript:alert(1)", "/"},
		{"data:text/html,hi", "/"},
		{"ftp://127.0.0.1:8080/", "/"},
		{"http:127.0.0.1:8080/", "/"},
		{"http:/evil.example", "/"},
		{"relative/path", "/"},
		{"%2F%2Fevil.example", "/"},
		{"/%0a/evil.example", ""},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodGet, "http://"+host+"/login", nil)
			want := tt.want
			if want == "" {
				want = tt.raw
			}
			if got := safeReturnTo(r, tt.raw); got != want {
				t.Errorf("safeReturnTo(%q) = %q, want %q", tt.raw, got, want)
			}
		})
	}
}
