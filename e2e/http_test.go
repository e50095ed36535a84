package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

type response struct {
	status int
	header http.Header
	body   []byte
}

func mustRequest(t testing.TB, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// noFollow is a client that shows redirects instead of following them.
var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
	return http.ErrUseLastResponse
}}

func doWith(t testing.TB, c *http.Client, req *http.Request) response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, body}
}

func do(t testing.TB, req *http.Request) response { return doWith(t, noFollow, req) }

func postForm(t testing.TB, url string, form url.Values) response {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return do(t, req)
}

func postJSON(t testing.TB, url string, v any) response {
	t.Helper()
	b, _ := json.Marshal(v)
	req, err := http.NewRequest("POST", url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return do(t, req)
}

// registerLoopback registers a CLI-style client and returns its id.
func registerLoopback(t testing.TB, origin string) string {
	t.Helper()
	resp := postJSON(t, origin+"/api/oauth/register", map[string]any{
		"client_name":   "e2e cli",
		"redirect_uris": []string{"http://127.0.0.1:7777/callback"},
	})
	if resp.status != http.StatusCreated {
		t.Fatalf("registration: %d %s", resp.status, resp.body)
	}
	id, _ := jsonOf(t, resp.body)["client_id"].(string)
	if id == "" {
		t.Fatalf("registration returned no client_id: %s", resp.body)
	}
	return id
}
