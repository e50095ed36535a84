package demoschool

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// call sends one request to h and returns the recorded response.
func call(t *testing.T, h http.Handler, method, target string, body io.Reader, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, body)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// postForm sends a form POST, as a browser does.
func postForm(t *testing.T, h http.Handler, target string, form url.Values, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	if header == nil {
		header = http.Header{}
	}
	header.Set("Content-Type", "application/x-www-form-urlencoded")
	return call(t, h, http.MethodPost, target, strings.NewReader(form.Encode()), header)
}

// signIn logs in and returns the session cookie.
func signIn(t *testing.T, h http.Handler, email, password string) *http.Cookie {
	t.Helper()
	rec := postForm(t, h, "/login", url.Values{"email": {email}, "password": {password}}, nil)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("sign-in as %s: status %d", email, rec.Code)
	}
	for _, c := range rec.Result().Cookies() {
		if c.Name == SessionCookie {
			return c
		}
	}
	t.Fatalf("sign-in as %s set no session cookie", email)
	return nil
}

func cookieHeader(c *http.Cookie) http.Header {
	return http.Header{"Cookie": {c.Name + "=" + c.Value}}
}

// decode parses a JSON response body into a generic value.
func decode(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, body %s", ct, rec.Body)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, rec.Body)
	}
	return m
}

// canonical re-encodes JSON so that two documents compare by content.
func canonical(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
