package authserver

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func (f *fixture) register(ctype, body string) (int, map[string]any) {
	rec := f.serve("POST", PathRegister, strings.NewReader(body), map[string]string{"Content-Type": ctype})
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		f.t.Fatalf("registration answered non-JSON %d: %s", rec.Code, rec.Body.String())
	}
	return rec.Code, m
}

func TestRegistrationRules(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		code       string
	}{
		{"loopback v4", `{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/callback"]}`, 201, ""},
		{"loopback v6", `{"redirect_uris":["http://[::1]:8976/cb"],"token_endpoint_auth_method":"none"}`, 201, ""},
		{"localhost", `{"client_name":"x","redirect_uris":["http://localhost:3000/cb"],"application_type":"native","extra":1}`, 201, ""},
		{"vendor with its redirect", `{"client_name":"Member App","redirect_uris":["` + memberRedirect + `"]}`, 201, ""},
		{"vendor name, foreign redirect", `{"client_name":"Member App","redirect_uris":["https://evil.example/cb"]}`, 400, "invalid_redirect_uri"},
		{"vendor name, loopback redirect", `{"client_name":"Member App","redirect_uris":["http://127.0.0.1:1/cb"]}`, 400, "invalid_redirect_uri"},
		{"unregistered https callback", `{"client_name":"Some Tool","redirect_uris":["https://tool.example/cb"]}`, 400, "invalid_redirect_uri"},
		{"unknown name, plain http", `{"client_name":"Some Tool","redirect_uris":["http://tool.example/cb"]}`, 400, "invalid_client_metadata"},
		{"custom scheme", `{"client_name":"x","redirect_uris":["com.example:/cb"]}`, 400, "invalid_redirect_uri"},
		{"fragment", `{"redirect_uris":["http://127.0.0.1:1/cb#frag"]}`, 400, "invalid_redirect_uri"},
		{"no redirect", `{"client_name":"cli"}`, 400, "invalid_redirect_uri"},
		{"redirects not an array", `{"redirect_uris":"http://127.0.0.1:1/cb"}`, 400, "invalid_redirect_uri"},
		{"malformed JSON", `{"redirect_uris":[`, 400, "invalid_client_metadata"},
		{"not an object", `[1,2]`, 400, "invalid_client_metadata"},
		{"loopback asking for a secret", `{"redirect_uris":["http://127.0.0.1:1/cb"],"token_endpoint_auth_method":"client_secret_post"}`, 400, "invalid_client_metadata"},
		{"implicit grant", `{"redirect_uris":["http://127.0.0.1:1/cb"],"grant_types":["implicit"]}`, 400, "invalid_client_metadata"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			status, m := f.register("application/json", tc.body)
			if status != tc.status || (tc.code != "" && m["error"] != tc.code) {
				t.Fatalf("got %d %v, want %d %s", status, m, tc.status, tc.code)
			}
			if status == 201 {
				for _, k := range []string{"client_id", "redirect_uris", "token_endpoint_auth_method", "grant_types", "response_types", "client_id_issued_at"} {
					if _, ok := m[k]; !ok {
						t.Errorf("response lacks %s: %v", k, m)
					}
				}
			}
		})
	}
}

func TestRegistrationShape(t *testing.T) {
	f := newFixture(t)
	if status, m := f.register("text/plain", `{"redirect_uris":["http://127.0.0.1:1/cb"]}`); status != 400 || m["error"] != "invalid_client_metadata" {
		t.Errorf("wrong content type: %d %v", status, m)
	}
	big := `{"client_name":"` + strings.Repeat("a", 100<<10) + `","redirect_uris":["http://127.0.0.1:1/cb"]}`
	if status, m := f.register("application/json", big); status != 400 {
		t.Errorf("oversized body: %d %v", status, m)
	}
}

func TestLoopbackRegistrationIsIdempotentAndUsable(t *testing.T) {
	f := newFixture(t)
	body := `{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/callback"]}`
	_, a := f.register("application/json", body)
	_, b := f.register("application/json", body)
	if a["client_id"] != b["client_id"] {
		t.Errorf("identical registrations gave %v and %v", a["client_id"], b["client_id"])
	}
	if a["token_endpoint_auth_method"] != "none" {
		t.Errorf("loopback clients are public: %v", a)
	}
	c, err := f.srv.client(context.Background(), a["client_id"].(string))
	if err != nil || c.Audience != AudienceOperator {
		t.Fatalf("client: %+v %v", c, err)
	}
	if !c.MatchRedirect("http://127.0.0.1:40000/callback") || c.MatchRedirect("http://127.0.0.1:40000/other") ||
		c.MatchRedirect("https://127.0.0.1:40000/callback") || c.MatchRedirect("http://10.0.0.1:8976/callback") {
		t.Error("loopback matching must ignore the port only")
	}
}

func FuzzParseRegistration(f *testing.F) {
	f.Add([]byte(`{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/callback"]}`))
	f.Add([]byte(`{"redirect_uris":"x"}`))
	f.Add([]byte(`{"redirect_uris":["http://[::1]:1/#"],"grant_types":[1]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := parseRegistration(body)
		if (req == nil) == (e == nil) {
			t.Fatalf("exactly one of request and error expected: %v %v", req, e)
		}
		if e != nil && e.Code != "invalid_client_metadata" && e.Code != "invalid_redirect_uri" {
			t.Fatalf("unexpected error code %s", e.Code)
		}
	})
}

// Vendor names match without regard to case and surrounding white space.
func TestVendorNameMatching(t *testing.T) {
	for _, name := range []string{"Member App", "member app", "  MEMBER APP\t", "\nMember App "} {
		f := newFixture(t)
		status, m := f.register("application/json", `{"client_name":`+strconv.Quote(name)+`,"redirect_uris":["`+memberRedirect+`"]}`)
		if status != 201 || m["client_id"] != memberClient {
			t.Errorf("client_name %q: %d %v, want the vendor %s", name, status, m, memberClient)
		}
	}
	f := newFixture(t)
	if status, m := f.register("application/json", `{"client_name":"Member  App","redirect_uris":["`+memberRedirect+`"]}`); status == 201 && m["client_id"] == memberClient {
		t.Error("white space inside the name must still differ")
	}
}
